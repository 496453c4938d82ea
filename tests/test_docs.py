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
