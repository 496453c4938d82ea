"""The docs name only real options, and the CI guide's workflows are well-formed YAML whose
steps do something."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pytest_t2ibias._settings import OPTIONS
from pytest_t2ibias.suite._yaml import _Loader

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_name_only_real_options(path):
    known = {option.cli for option in OPTIONS}
    named = set(re.findall(r"--t2i-[a-z0-9-]*[a-z0-9]", path.read_text(encoding="utf-8")))
    assert sorted(named - known) == []


def _ci_blocks() -> list[dict]:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    return [yaml.load(block, Loader=_Loader)  # YAML 1.2, as CI reads it: `on:` is a key
            for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def test_the_github_workflow_has_a_plan_and_a_gpu_gate():
    workflow = _ci_blocks()[0]
    assert set(workflow["on"]) == {"pull_request", "push"}
    plan, gate = workflow["jobs"]["plan"], workflow["jobs"]["gate"]
    assert gate["needs"] == "plan" and "gpu" in gate["runs-on"]
    for job in (plan, gate):
        assert all(("uses" in step) != ("run" in step) for step in job["steps"])
    runs = "\n".join(step.get("run", "") for step in gate["steps"])
    for needed in ("--t2i-device=auto", "--t2i-offline", "--t2i-cache-dir", "--t2i-json",
                   "--t2i-html", "--junitxml", "pytest_t2ibias prefetch", "accelerate launch"):
        assert needed in runs
    saves = [step for step in gate["steps"] if step.get("uses", "").startswith("actions/cache/save")]
    assert saves and all(step["if"].startswith("always()") or "cache-hit" in step["if"]
                         for step in saves)


def test_the_gitlab_job_runs_on_a_gpu_runner_and_keeps_its_evidence():
    gitlab = _ci_blocks()[1]
    gate = gitlab["fairness-gate"]
    assert gate["tags"] == ["gpu"] and gate["artifacts"]["when"] == "always"
    assert gate["artifacts"]["reports"]["junit"] == "reports/junit.xml"
    assert all(cache["when"] == "always" for cache in gate["cache"])
    assert ".t2ibias_cache/" in [path for cache in gate["cache"] for path in cache["paths"]]


def test_the_ci_guides_plan_figures_are_what_the_plan_prints():
    """docs/ci.md quotes the example suites' plan; rerun it (tokenizers, no weights)."""
    import os
    import subprocess
    import sys

    quoted = re.search(r"lists (\d+) images in (\d+) items with a known count, (\d+) of them\s+"
                       r"flagged", (ROOT / "docs" / "ci.md").read_text(encoding="utf-8"))
    assert quoted, "docs/ci.md no longer quotes the example plan's figures"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    plan = subprocess.run([sys.executable, "-m", "pytest", "example_suites/", "--t2i-plan",
                           "-p", "no:cacheprovider", "-p", "no:xdist"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300).stdout
    printed = re.search(r"(\d+) images in (\d+) items with a known count.*?items "
                        r"underpowered near their limit: (\d+)", plan, re.S)
    assert printed, plan[-2000:]
    assert quoted.groups() == printed.groups()


def test_the_docs_state_one_batch_size_default_and_offer_the_family_options_the_code_has():
    performance = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    checks = (ROOT / "docs" / "writing-checks.md").read_text(encoding="utf-8")
    option = next(o for o in OPTIONS if o.name == "t2i_batch_size")
    assert str(option.default) == "8" and "default 8" in performance
    assert "64 when it is auto" not in performance
    assert "need every check's figure before any verdict, which items" not in checks  # #27
    from pytest_t2ibias._settings import FAMILY_POLICIES

    assert all(f"--t2i-family={policy}" in checks for policy in ("holm", "bh"))
    assert set(FAMILY_POLICIES) == {"none", "bonferroni", "holm", "bh"}


def test_the_reference_says_a_configured_classifier_reads_its_axis_whatever_classifier_says():
    """The code (``Instrument.attributes``) reads an axis with its classifier whenever one is
    configured; the reference once said ``classifier: false`` meant the VQA model (#27)."""
    import inspect

    from pytest_t2ibias.instrument import Instrument

    source = inspect.getsource(Instrument.attributes)
    assert "elif self.models.has_classifier(axis.name):" in source
    text = (ROOT / "docs" / "yaml-reference.md").read_text(encoding="utf-8")
    section = text.split("### `axes.NAME.classifier`", 1)[1].split("###", 1)[0]
    assert "is read by that classifier, not the VQA model" in section
    assert "instead of the VQA model" not in section
