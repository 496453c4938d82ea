"""The plugin loads in every pytest run of the environment: importing it must stay cheap
(issue #14). torch, diffusers, transformers and scipy load on first use, and a fully cached
run never needs torch to compute its backends' fingerprints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "diffusers", "transformers", "scipy")


def _heavy_after(code: str) -> list[str]:
    probe = f"{code}; import sys; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip().splitlines()[-1])  # a printed list of names


@pytest.mark.parametrize("module", ["pytest_t2ibias.plugin", "pytest_t2ibias",
                                    "pytest_t2ibias.backends"])
def test_importing_the_plugin_imports_no_heavy_library(module):
    assert _heavy_after(f"import {module}") == []


def test_a_lazy_generator_fingerprints_without_torch(tmp_path):
    """A warm run builds the lazy backends for their fingerprints only: no torch for that."""
    code = (
        "from pytest_t2ibias.backends._lazy import LazyDiffusersGenerator, lazy_answerer, "
        "lazy_classifier\n"
        "from pytest_t2ibias._settings import Settings\n"
        "import dataclasses\n"
        f"root = {str(tmp_path)!r}\n"
        "import json, pathlib; (pathlib.Path(root) / 'model_index.json').write_text('{}')\n"
        "fields = {f.name: None for f in dataclasses.fields(Settings)}\n"
        "fields.update(device='cpu', dtype='auto', offline=True)\n"
        "settings = Settings(**fields)\n"
        "LazyDiffusersGenerator(root, settings, origin='--t2i-model').fingerprint\n"
        "lazy_answerer(root, settings, origin='--t2i-vqa').fingerprint\n"
        "lazy_classifier(root, settings, axis='gender', origin='--t2i-classifier').fingerprint"
    )
    assert _heavy_after(code) == []


def test_an_unrelated_test_run_loads_nothing_of_ours_that_costs(pytester):
    """Installed, the plugin is in every pytest run of the environment: a run without suites
    or helpers must not pay for numpy, PIL, PyYAML or rich (each loads with its first use),
    nor for our verdicts, reports and saved-run rules (the session loads them when a check
    reports or a baseline option is set)."""
    # A suite beside it: pytest passes it by while collecting the directory.
    pytester.makefile(".t2i.yaml", beside="suite: s\nprompt: a\nsubjects: [x]\naxes: {}\nchecks: []\n")
    pytester.makepyfile(test_unrelated="""
        import sys

        def test_unrelated():
            loaded = [m for m in ("numpy", "PIL", "yaml", "rich", "scipy", "torch") if m in sys.modules]
            assert loaded == []
            ours = ("verdict", "report", "baseline", "runs", "suite.collect")
            assert [m for m in ours if f"pytest_t2ibias.{m}" in sys.modules] == []
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_unrelated.py")
    result.assert_outcomes(passed=1)


def test_every_public_name_loads_on_first_use():
    import pytest_t2ibias

    assert set(pytest_t2ibias._HOME) == set(pytest_t2ibias.__all__)
    for name in pytest_t2ibias.__all__:
        assert getattr(pytest_t2ibias, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'assert_everything'"):
        pytest_t2ibias.assert_everything  # noqa: B018


def test_a_warm_example_slice_imports_no_torch_diffusers_or_transformers(pytester, tmp_path):
    """Issue #36: a run whose images and answers are all cached loads no model, and no
    tokenizer either: which words a prompt's model cannot read is remembered by (tokenizer
    fingerprint, prompt) beside the cache (``backends.readings``)."""
    root = Path(__file__).resolve().parents[2]
    pytester.makeconftest(f"""
        import sys

        def pytest_sessionfinish(session):
            loaded = sorted(m for m in {HEAVY[:3]!r} if m in sys.modules)
            with open({str(tmp_path / 'heavy.txt')!r}, "w") as out:
                out.write(",".join(loaded))
    """)
    run = ("-p", "no:cacheprovider", "-c", str(root / "pyproject.toml"), "--rootdir", str(root),
           "-p", "conftest", str(root / "example_suites" / "toy_occupations.t2i.yaml"),
           "-k", "gender_severity_control", "--t2i-images-per-prompt=2", "--t2i-steps=2",
           f"--t2i-cache-dir={tmp_path / 'cache'}", "--t2i-bootstrap=50")
    cold = pytester.runpytest_subprocess(*run)
    cold.assert_outcomes(passed=1)
    assert "torch" in (tmp_path / "heavy.txt").read_text()  # the cold run did load them
    warm = pytester.runpytest_subprocess(*run)
    warm.assert_outcomes(passed=1)
    assert (tmp_path / "heavy.txt").read_text() == ""
