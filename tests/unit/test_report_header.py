"""The run header and the terminal summary, written from plain values (no pytest session):
the backends every process made, deduplicated and sorted; the summary's lines under -q and not."""

from __future__ import annotations

from pytest_t2ibias._settings import Settings
from pytest_t2ibias._types import Estimate
from pytest_t2ibias.family import Family
from pytest_t2ibias.reports.collect import verdict_row
from pytest_t2ibias.reports.header import header_lines, run_header
from pytest_t2ibias.reports.terminal import write_summary
from pytest_t2ibias.verdict import Verdict

WORK = {"images_generated": 4, "images_from_cache": 2, "answers_scored": 6, "answers_from_cache": 0}


class Reporter:
    """What ``write_summary`` uses of pytest's terminal reporter, keeping the lines."""

    hasmarkup = False

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._tw = type("Writer", (), {"fullwidth": 100})()

    def section(self, title: str) -> None:
        self.lines.append(f"== {title} ==")

    def write(self, text: str) -> None:
        self.lines.append(text)

    def write_line(self, line: str, **markup: bool) -> None:
        self.lines.append(line)


def rows():
    """One gated check (a run of only point decisions adds a warning, tests/unit/test_ungated_warning.py)."""
    verdict = Verdict(outcome="pass", check="w1_below", value=Estimate(0.1, 0.0, 0.2, 8),
                      threshold=0.3, message="ok", confidence=0.95)
    return [verdict_row("a::t", verdict)]


def test_the_run_header_names_each_backend_once_models_apart_from_judges(tmp_path):
    made = [{"role": "vqa", "model": "clip", "fingerprint": "f1"},
            {"role": "generator:candidate", "model": "sd", "fingerprint": "f2"},
            {"role": "vqa", "model": "clip", "fingerprint": "f1"}]  # a worker made it too
    run = run_header(Settings.standalone(model="sd", vqa="clip"), Family("holm", 3), made, tmp_path)

    assert run["models"] == [made[1]] and run["judges"] == [made[0]]
    assert run["settings"]["family"] == "holm" and run["settings"]["gated_checks"] == 3
    assert run["git_revision"] is None  # not a repository


def test_the_header_lines_name_the_folder_audited_and_the_judges():
    *named, design = header_lines(Settings.standalone(images="/imgs", vqa="clip"))
    assert named == ["t2ibias: auditing images in /imgs", "t2ibias: judges vqa clip"]
    assert design.startswith("t2ibias: sampling design: adaptive (the default")


def test_a_run_with_nothing_to_draw_prints_no_sampling_design():
    # the design line reads metrics.sequential (numpy): an unrelated run must not pay for it
    assert header_lines(Settings.standalone()) == []
    assert header_lines(Settings.standalone(images="/imgs", adaptive=False))[-1].startswith(
        "t2ibias: sampling design: fixed n")


def test_the_summary_is_one_line_under_q():
    reporter = Reporter()
    write_summary(reporter, rows(), WORK, audit=True, quiet=True, family="family: none",
                  width=None)

    assert reporter.lines == [("t2ibias: 1 results: 1 passed; work: 4 images audited, 2 from "
                               "cache; 6 answers scored, 0 from cache")]


def test_the_summary_section_has_the_table_the_tally_the_family_and_the_work():
    reporter = Reporter()
    write_summary(reporter, rows(), {}, audit=False, quiet=False, family="family: none",
                  width=None)

    assert reporter.lines[0] == "== t2ibias summary ==" and "w1_below" in reporter.lines[1]
    assert reporter.lines[2:] == ["t2ibias: 1 results: 1 passed", "family: none"]  # no work


def test_an_escape_in_a_model_path_is_shown_not_obeyed(tmp_path):
    """Was: ``--t2i-model`` with an ESC reached two header lines raw (#35)."""
    model = str(tmp_path / "model\x1b[2Jcleared")
    lines = header_lines(Settings.standalone(model=model, baseline_model=model))
    assert lines and not any("\x1b" in line for line in lines)
    assert sum("model\\x1b[2Jcleared" in line for line in lines) >= 2
