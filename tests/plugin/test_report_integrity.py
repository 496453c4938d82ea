"""Every collected item is exactly one row in the terminal table, the JSON and JUnit: a check
that raises anything (not only a ``CheckError``) is an ERROR row naming the exception and
where, and the JSON's counts add up to the items run (issue #23)."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest
from support.intermit_world import FAKE_WORLD

from pytest_t2ibias.kinds import BUILTIN_KINDS
from pytest_t2ibias.testing.suites import every_kind_suite, sample_entry

EVERY_KIND = every_kind_suite(BUILTIN_KINDS)
"""One check of every built-in kind (each kind's ``CheckKind.sample``): a kind added to the
registry is in it with no edit here."""
KINDS = len(BUILTIN_KINDS)

BREAK_EVERY_KIND = textwrap.dedent("""\
    import dataclasses
    from pytest_t2ibias.kinds import CHECK_KINDS

    SAVED = dict(CHECK_KINDS)

    def broken(ctx):
        return {}["a method's bug"]  # a KeyError, as in socialcf.py:51 before

    def pytest_configure(config):
        for name, kind in SAVED.items():
            CHECK_KINDS[name] = dataclasses.replace(kind, run=broken)

    def pytest_unconfigure(config):
        CHECK_KINDS.update(SAVED)
    """)


def _run(pytester: pytest.Pytester, *args: str):
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=m", "--t2i-vqa=v",
                                "--t2i-baseline-model=b", "--t2i-json=report.json",
                                "--junitxml=junit.xml", *args)
    report = json.loads((pytester.path / "report.json").read_text())
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    return result, report, junit


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_every_kind_raising_is_an_error_row_in_table_json_and_junit(pytester, workers):
    pytester.makeconftest(FAKE_WORLD + BREAK_EVERY_KIND)
    pytester.makefile(".t2i.yaml", every=EVERY_KIND)
    result, report, junit = _run(pytester, *workers)

    assert KINDS >= 15  # the built-ins at #23, and any added since
    result.assert_outcomes(errors=KINDS)
    rows = report["checks"]
    assert sorted(row["check"] for row in rows) == sorted(BUILTIN_KINDS)
    assert all(row["status"] == "error" for row in rows)
    assert all("unexpected KeyError at " in row["reason"] and "a method's bug" in row["reason"]
               for row in rows), rows[0]["reason"]
    # the counts add up to the items run
    assert report["summary"]["error"] == KINDS and sum(
        report["summary"][k] for k in ("passed", "failed", "xfailed", "xpassed", "error")) == KINDS
    suite = junit if junit.tag == "testsuite" else junit.find("testsuite")
    assert int(suite.get("errors")) == KINDS and int(suite.get("failures")) == 0
    result.stdout.fnmatch_lines([f"*t2ibias: {KINDS} results: {KINDS} errors*"])


def test_an_xfail_mark_does_not_hide_a_check_that_raised(pytester):
    """An xfail expects the model to be biased, not the method to crash."""
    pytester.makeconftest(FAKE_WORLD + BREAK_EVERY_KIND)
    entry = sample_entry("entropy_below")
    pytester.makefile(".t2i.yaml", every=EVERY_KIND.replace(
        entry, entry.removesuffix("}") + ", marks: [xfail]}"))
    result, report, _ = _run(pytester, "-k", "k_entropy_below")
    result.assert_outcomes(errors=1)
    assert [row["status"] for row in report["checks"]] == ["error"]


def test_a_real_method_error_is_a_row_not_a_missing_item(pytester):
    """Was: ``is_nonnegative`` on a one-axis suite raised ValueError inside the IS matrix and
    the JSON reported "1 results: 1 passed" for 2 items."""
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", one=textwrap.dedent("""\
        suite: one
        defaults: {images_per_prompt: 8, seed: 0}
        prompt: "a photo of a {subject}"
        subjects: [nurse]
        axes:
          gender:
            question: "What is the gender of the person?"
            choices: [male, female]
            counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
        checks:
          - {id: balance, kind: w1_below, axes: [gender], threshold: 1.0}
          - {id: spill, kind: is_nonnegative, mitigate: [gender]}
        """))
    result, report, _ = _run(pytester)
    statuses = sorted((row["check_id"], row["status"]) for row in report["checks"])
    assert statuses == [("balance", "passed"), ("spill", "error")]
    assert report["summary"]["passed"] == 1 and report["summary"]["error"] == 1
    (spill,) = [row for row in report["checks"] if row["check_id"] == "spill"]
    assert spill["reason"].startswith("unexpected ValueError at ")


def test_a_target_that_names_no_choice_is_an_error_naming_the_check(pytester):
    """Was: ``target: {purple: 1.0}`` raised KeyError deep in socialcf.py."""
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", skew=textwrap.dedent("""\
        suite: skew
        defaults: {images_per_prompt: 8, seed: 0}
        prompt: "a photo of a {subject}"
        subjects: [nurse]
        axes:
          gender: {question: "What is the gender of the person?", choices: [male, female]}
        checks:
          - {id: purple, kind: max_skew_below, axes: [gender], threshold: 0.5, target: {purple: 1.0}}
        """))
    result, report, _ = _run(pytester)
    result.assert_outcomes(errors=1)
    (row,) = report["checks"]
    assert row["reason"].startswith("CheckError: ") and "skew.t2i.yaml:8: check 'purple': " \
        "target must give a share for each choice of axis 'gender' (male, female), got purple" \
        in row["reason"]
