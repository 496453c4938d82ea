"""Saved runs over many releases (issue #43): ``runs list`` and ``runs trend`` (CSV), oldest
first by the run header's date, filtered by name or check; user text safe in a spreadsheet."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from support.saved_rows import row

from pytest_t2ibias.__main__ import main
from pytest_t2ibias.runs.saved import save_run


def _header(date: str, revision: str) -> dict:
    return {"date": date, "git_revision": revision, "settings": {"model": "org/sd-ft"},
            "models": [], "judges": []}


def _storage(tmp_path: Path) -> Path:
    storage = tmp_path / "runs"
    # saved out of date order: the list and the trend follow the dates, not the names
    save_run(storage, "b-release-2", [row("nurse", 0.40, status="failed"), row("doctor", 0.22)],
             {}, _header("2026-03-01T00:00:00+00:00", "bbbb"))
    save_run(storage, "a-release-1", [row("nurse", 0.30), row("doctor", 0.20)], {},
             _header("2026-02-01T00:00:00+00:00", "aaaa"))
    save_run(storage, "c-nightly", [row("=HYPERLINK(1)", 0.10)], {},
             _header("2026-04-01T00:00:00+00:00", "cccc"))
    (storage / "broken.json").write_text("{not json")
    return storage


def test_runs_list_is_oldest_first_with_each_tally(tmp_path, capsys):
    storage = _storage(tmp_path)
    assert main(["runs", "list", "--storage", str(storage)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["a-release-1", "b-release-2", "c-nightly"]
    assert "2 checks: 2 passed" in lines[0] and "1 failed, 1 passed" in lines[1]
    assert "aaaa" in lines[0] and lines[0].endswith("org/sd-ft")
    assert "skipped" in err and "broken.json" in err  # named, not the end of the list
    assert main(["runs", "list", "--storage", str(storage), "--match", "release"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_runs_trend_writes_each_figure_and_interval_as_csv(tmp_path, capsys):
    storage, out = _storage(tmp_path), tmp_path / "trend.csv"
    assert main(["runs", "trend", "--storage", str(storage), "--csv", str(out),
                 "--match", "release"]) == 0
    assert "wrote" in capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    nurse = [(r["run"], *(round(float(r[k]), 6) for k in ("value", "low", "high")), r["status"])
             for r in rows if r["subject"] == "nurse"]
    assert nurse == [("a-release-1", 0.30, 0.25, 0.35, "passed"),
                     ("b-release-2", 0.40, 0.35, 0.45, "failed")]
    assert {r["check"] for r in rows} == {"gate"} and rows[0]["git_revision"] == "aaaa"

    assert main(["runs", "trend", "--storage", str(storage), "--check", "gate"]) == 0
    printed = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(printed) == 5
    assert printed[-1]["subject"] == "'=HYPERLINK(1)"  # a spreadsheet shows it, never runs it


def test_runs_trend_draws_each_figure_over_the_runs(tmp_path, capsys):
    from html.parser import HTMLParser

    storage, page = _storage(tmp_path), tmp_path / "trend.html"
    assert main(["runs", "trend", "--storage", str(storage), "--html", str(page)]) == 0
    assert "wrote" in capsys.readouterr().out

    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: list[tuple[str, dict]] = []

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, dict(attrs)))

    tags = Tags()
    tags.feed(page.read_text())
    charts = [a for t, a in tags.tags if t == "svg"]
    dots = [a for t, a in tags.tags if t == "circle"]
    whiskers = [a for t, a in tags.tags if t == "line"]
    assert len(charts) == 3  # nurse, doctor, the hostile subject: a chart a figure
    assert len(dots) == len(whiskers) == 5  # a dot and an interval per run that has the figure
    nurse = [a for a in dots if a["fill"] == "#cf222e"]
    assert len(nurse) == 1  # release 2's failed nurse figure, in red
    assert all(tag not in ("script", "a") for tag, _ in tags.tags)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="headless Chromium is not installed "
                    "(Debian: apt-get install chromium; .ci/run installs it)")
def test_headless_chromium_draws_the_trend_page(tmp_path, capsys):
    """The trend page a user opens draws each figure's dots and intervals, not a blank page:
    its failed release in red, its passed ones in green (issue #43's screenshot)."""
    storage, page, shot = _storage(tmp_path), tmp_path / "trend.html", tmp_path / "trend.png"
    assert main(["runs", "trend", "--storage", str(storage), "--html", str(page)]) == 0
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1000,900", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    assert shot.exists(), done.stderr[-2000:]
    with Image.open(shot) as image:
        drawn = {colour: count for count, colour in
                 image.convert("RGB").getcolors(maxcolors=1 << 20)}
    assert len(drawn) > 50  # text, axes, dots and whiskers
    assert drawn.get((0xCF, 0x22, 0x2E), 0) > 20  # release 2's failed nurse figure
    assert drawn.get((0x1A, 0x7F, 0x37), 0) > 20  # the passed figures
