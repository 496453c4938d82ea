"""The docs name only real options, and the CI guide's workflows are well-formed YAML whose
steps do something."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pytest_t2ibias._settings import OPTIONS
from pytest_t2ibias.suite._yaml import _Loader

ROOT = Path(__file__).resolve().parents[2]
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


# Every command the README shows is run, here or by .ci/run (issue #43): the quick start's by
# tests/plugin/test_wheel.py from the installed wheel, the rest by .ci/run. A command added to the
# README without a runner fails here until one runs it.
README_COMMAND_RUNNERS = {
    "pip install pytest-t2ibias": (".ci/run", 'pip install --quiet "$wheel_dir"/dist/*.whl'),
    "pip install torch --index-url https://download.pytorch.org/whl/cpu":
        (".ci/run", "pip install --quiet torch=="),
    "python -m pytest example_suites/": (".ci/run", "python -m pytest example_suites"),
    "python -m pytest tests -q -n 2": (".ci/run", "python -m pytest tests"),
}


def _indented_commands(text: str) -> list[str]:
    starts = ("pip ", "pytest ", "python ", "t2ibias ", "mkdocs ", "accelerate ")
    return [line.strip() for line in text.splitlines()
            if line.startswith("    ") and line.strip().startswith(starts)]


def test_every_readme_command_is_run_by_a_test_or_by_ci():
    from support.quickstart import quickstart_commands

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    by_the_wheel_test = set(quickstart_commands(readme))
    assert len(by_the_wheel_test) == 4
    for command in _indented_commands(readme):
        if command in by_the_wheel_test:
            continue
        assert command in README_COMMAND_RUNNERS, f"nothing runs the README's `{command}`"
        runner, evidence = README_COMMAND_RUNNERS[command]
        assert evidence in (ROOT / runner).read_text(encoding="utf-8"), (command, runner)


def _subcommand_options() -> dict[str, set[str]]:
    """Each ``t2ibias`` command (``cache prune``, ``runs list`` as one) -> its option strings."""
    import argparse

    from pytest_t2ibias.__main__ import build_parser

    found: dict[str, set[str]] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        options = {s for action in parser._actions for s in action.option_strings}
        found[prefix.strip()] = options
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{prefix} {name}")

    walk(build_parser(), "")
    return found


DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_commands_name_real_commands_and_their_real_options(path):
    """What the docs tell a reader to type exists: a ``t2ibias``/``python -m pytest_t2ibias``
    command and each of its options, a script or module of this repository and each ``--flag``
    it is given (``--t2i-`` options: ``test_the_docs_name_only_real_options``)."""
    import importlib.util

    commands = _subcommand_options()
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in _indented_commands(text):
        words = line.split("#", 1)[0].split()
        flags = {w.split("=", 1)[0] for w in words if w.startswith("--")
                 and not w.startswith("--t2i-")}
        if words[0] == "t2ibias" or words[:3] == ["python", "-m", "pytest_t2ibias"]:
            rest = words[1:] if words[0] == "t2ibias" else words[3:]
            if rest and rest[0] == "prefetch":
                continue  # pytest's own arguments follow
            name = " ".join(rest[:2]) if rest[:1] in (["cache"], ["runs"]) else rest[0]
            assert name in commands, f"{path.name}: `{line}`: no command {name!r}"
            flags = {f.strip("[]") for f in flags}
            assert flags <= commands[name], f"{path.name}: `{line}`: {flags - commands[name]}"
        elif words[0] == "python" and len(words) > 1 and words[1].endswith(".py"):
            script = ROOT / words[1]
            assert script.is_file(), f"{path.name}: `{line}`: no {words[1]}"
            source = script.read_text(encoding="utf-8")
            assert all(f'"{flag}"' in source for flag in flags), (path.name, line, flags)
        elif words[:2] == ["python", "-m"] and words[2] not in ("pip", "pytest"):
            module = words[2]
            assert importlib.util.find_spec(module) is not None, f"{path.name}: no module {module}"


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return [page for entry in nav for page in _nav_pages(entry)]


def test_the_site_navigation_holds_every_docs_page_and_only_those():
    """mkdocs.yml's nav over docs/ (``mkdocs build --strict`` in .ci/run fails on an omitted
    page too; this says which, in the fast suite)."""
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = _nav_pages(site["nav"])
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").glob("*.md"))
    assert sorted(listed) == pages
    assert site["strict"] is True and "docgen/mkdocs_hooks.py" in site["hooks"]


def test_troubleshooting_names_every_error_the_plugin_raises_on_purpose():
    from pytest_t2ibias import errors

    page = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    raised = [name for name, value in vars(errors).items()
              if isinstance(value, type) and issubclass(value, Exception)
              and value.__module__ == errors.__name__]
    assert len(raised) >= 15
    assert [name for name in raised if f"`{name}`" not in page] == []


def test_the_cli_page_has_a_section_per_command_and_the_options_page_the_generated_table():
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    commands = [name for name in _subcommand_options() if name not in ("", "cache", "runs")]
    assert "compare" in commands and "cache prune" in commands
    assert [name for name in commands if f"## `t2ibias {name}`" not in cli] == []
    from docgen.mkdocs_hooks import OPTIONS_MARKER, options_table

    assert OPTIONS_MARKER in (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    table = options_table()
    assert all(f"`{option.cli}`" in table and f"`{option.name}`" in table for option in OPTIONS)


def test_the_site_hook_escapes_bracket_pairs_only_outside_code():
    from docgen.mkdocs_hooks import escape_bracket_pairs

    text = "IS[x][y] and `IS[x][y]` and [a link](page.md)\n```\nm[i][j]\n```\n"
    assert escape_bracket_pairs(text) == (
        "IS\\[x\\]\\[y\\] and `IS[x][y]` and [a link](page.md)\n```\nm[i][j]\n```\n")


def test_the_tutorial_suite_is_the_readme_quick_start():
    from support.quickstart import quickstart_blocks

    blocks = quickstart_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    shown = (ROOT / "docs" / "examples" / "quickstart.t2i.yaml").read_text(encoding="utf-8")
    assert blocks["fairness/occupations.t2i.yaml"] == shown
    assert '--8<-- "docs/examples/quickstart.t2i.yaml"' in (
        ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    assert len(shown.splitlines()) == 12 and "confidence: 0.95" in shown
