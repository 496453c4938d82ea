"""The README's "Writing checks" suite is a real file that loads and runs (issue #36): copied
verbatim from the README, it used to name an axis it did not define and a filter the toy
CLIP could not read."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "occupations.t2i.yaml"


def test_the_readme_shows_the_example_file_verbatim():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- docs/examples/occupations\.t2i\.yaml -->\n```yaml\n(.*?)```\n",
                      readme, re.DOTALL)
    assert shown, "README.md lost the example suite's block"
    assert shown.group(1) == EXAMPLE.read_text(encoding="utf-8")


def test_the_readme_example_runs_on_the_toy_models_without_an_error(pytester, tmp_path):
    """A few images of one subject: every item gives a verdict (pass or fail), none an ERROR."""
    pytester.makefile(".t2i.yaml", occupations=EXAMPLE.read_text(encoding="utf-8"))
    fixtures = ROOT / "fixtures"
    pytester.makeini(f"""\
        [pytest]
        t2i_model = {fixtures / 'toy-sd'}
        t2i_vqa = {fixtures / 'toy-clip'}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 100
    """)
    report = tmp_path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "doctor", "--t2i-steps=4",
                                "--t2i-images-per-prompt=3", f"--t2i-json={report}")
    outcomes = result.parseoutcomes()
    assert "errors" not in outcomes and outcomes.get("passed", 0) + outcomes.get("failed", 0) == 3
    rows = json.loads(report.read_text())["checks"]
    assert {row["status"] for row in rows} <= {"passed", "failed"}
    assert not any(row["figures"].get("unread_prompts") for row in rows)


def test_the_readme_example_plans_every_item_with_nothing_unread(pytester):
    pytester.makefile(".t2i.yaml", occupations=EXAMPLE.read_text(encoding="utf-8"))
    pytester.makeini(f"""\
        [pytest]
        t2i_model = {ROOT / 'fixtures' / 'toy-sd'}
        t2i_vqa = {ROOT / 'fixtures' / 'toy-clip'}
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-plan")
    planned = {line.split()[0].split("::")[-1] for line in result.outlines
               if "occupations.t2i.yaml::" in line}
    assert planned == {f"{check}[{subject}-{axis}]" for subject in ("doctor", "nurse", "musician")
                       for check, axis in (("severity", "gender"), ("severity", "age"),
                                           ("spillover", "gender"))}
    result.stdout.no_fnmatch_line("*unread words*")


def test_the_docs_figures_of_the_example_run_are_what_the_plan_counts(pytester):
    """Issue #36: the images and answers of the example run (docs/examples.md, once the
    README's) come from ``--t2i-plan`` (they had drifted 8% from what a cold run made)."""
    page = (ROOT / "docs" / "examples.md").read_text(encoding="utf-8")
    said = re.search(r"The example run's checks expect ([\d,]+) images and ([\d,]+) answers",
                     page)
    assert said, "docs/examples.md no longer states the example run's figures"
    result = pytester.runpytest_subprocess(
        str(ROOT / "example_suites"), "--t2i-plan", "-p", "no:cacheprovider", "-c",
        str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT))
    result.stdout.fnmatch_lines([(f"t2ibias: the checks expect {said.group(1)} images and "
                                  f"{said.group(2)} answers*")])


def test_the_two_commands_are_two_and_ci_finds_the_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip() for line in section.splitlines() if line.startswith("    ")]
    assert commands == ["python -m pytest example_suites/", "python -m pytest tests -q -n 2"]
    # .ci/run's rule: the first indented line starting "python -m pytest tests"
    ci = re.findall(r"^    (python -m pytest tests.*)$", readme, re.MULTILINE)
    assert ci[0] == "python -m pytest tests -q -n 2"


def test_the_readme_example_gates_every_check_on_an_interval():
    """Issue #43: the example people copy gated 0 of 2 checks on an interval (a severity of
    0.461 [0.000, 0.911] passed its 0.5 at 8 images a prompt)."""
    from pytest_t2ibias.suite import load_suite

    suite = load_suite(EXAMPLE)
    assert suite.checks and all(check.params.confidence for check in suite.checks)
