"""The plugin loads in every pytest run of the environment: importing it must stay cheap
(issue #14). torch, diffusers, transformers and scipy load on first use, and a fully cached
run never needs torch to compute its backends' fingerprints."""

from __future__ import annotations

import subprocess
import sys

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
