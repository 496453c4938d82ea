"""Issue #47: the offline CI gate (``HF_HUB_OFFLINE=1``, docs/ci.md) runs the models a
conftest hook serves; the startup model check asks the ``pytest_t2ibias_make_*`` hooks before
it refuses a name, and says why it refuses offline."""

from __future__ import annotations

import os

import pytest

SUITE = """\
suite: served
defaults: {images_per_prompt: 2, seed: 0}
prompt: "a photo of a {subject}"
subjects: [nurse]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
checks:
  - {id: balance, kind: entropy_below, axes: [gender], threshold: 1.0}
"""

CONFTEST = """
import pytest

class Served:
    fingerprint = "served"

    def generate(self, requests):
        raise NotImplementedError

@pytest.hookimpl
def pytest_t2ibias_make_generator(config, model, role, options):
    return Served() if model == "http-demo" else None

@pytest.hookimpl
def pytest_t2ibias_make_vqa(config, model):
    return Served() if model == "fake-judge" else None
"""


@pytest.fixture
def served(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    pytester.makefile(".t2i.yaml", served=SUITE)
    pytester.makeconftest(CONFTEST)
    return pytester


def test_names_a_conftest_hook_serves_are_not_refused_offline(served):
    result = served.runpytest("-p", "no:cacheprovider", "--collect-only", "-q",
                              "--t2i-model=http-demo", "--t2i-vqa=fake-judge")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stdout.fnmatch_lines(["*balance*nurse-gender*"])


def test_a_name_no_hook_serves_is_refused_saying_it_is_offline_and_why(served):
    result = served.runpytest("-p", "no:cacheprovider", "--collect-only",
                              "--t2i-model=http-demo", "--t2i-vqa=nobody/judge")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: --t2i-vqa=nobody/judge: no such folder, not a model in the local Hugging Face "
        "cache (offline: HF_HUB_OFFLINE is set), and no pytest_t2ibias_make_* hook makes it"])


def test_a_hook_that_raises_for_a_name_does_not_serve_it(served):
    served.makeconftest(CONFTEST + """
@pytest.hookimpl(tryfirst=True)
def pytest_t2ibias_make_llm(config, model):
    raise RuntimeError("no such LM")
""")
    result = served.runpytest("-p", "no:cacheprovider", "--collect-only",
                              "--t2i-model=http-demo", "--t2i-vqa=fake-judge", "--t2i-llm=lm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --t2i-llm=lm: no such folder*no pytest_t2ibias_make_*"])


def test_the_tests_run_in_a_normalised_environment():
    """tests/conftest.py resets what a developer's shell or a CI runner brings: run under
    ``HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 CI=true MKL_NUM_THREADS=3``, no test sees them
    (a test that needs one sets it, as the fixture above does)."""
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "CI", "MKL_NUM_THREADS"):
        assert variable not in os.environ
    assert os.environ["OMP_NUM_THREADS"] == "1"
