"""``t2ibias label``: the labelling page driven by keystrokes in headless Chromium (Playwright
on the system's ``chromium``), its ``index.jsonl`` read back by the suite, and the judge's
correction applied in full from it (issue #45)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Markup in the suite's name: the page must show it as text, never run it.
HOSTILE = "tiny <img src=x onerror=document.title='owned'>"
SUITE = f"""\
suite: "{HOSTILE}"
defaults: {{images_per_prompt: 12, seed: 0, steps: 10}}
prompt: "a photo of a {{subject}}"
subjects: [doctor, nurse]  # mostly men, mostly women: both classes get labels
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    judge_calibration: {{folder: labels}}
checks:
  - {{id: gender_balance, kind: entropy_below, axes: [gender], threshold: 0.9,
     judge_correction: full}}
"""
PER_CLASS = 4


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A tiny suite over the toy models, its cache warmed by ``prefetch``."""
    root = tmp_path_factory.mktemp("label")
    (root / "tiny.t2i.yaml").write_text(SUITE)
    (root / "pytest.ini").write_text(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {REPO / 'fixtures' / 'toy-sd'}
        t2i_vqa = {REPO / 'fixtures' / 'toy-clip'}
        t2i_device = cpu
        t2i_bootstrap = 200
        t2i_cache_dir = cache
    """))
    warm = _run([sys.executable, "-m", "pytest_t2ibias", "prefetch", "tiny.t2i.yaml"], root)
    assert warm.returncode == 0, warm.stdout + warm.stderr
    return root


class LabelProcess:
    """``t2ibias label`` in a child process; its address read from the line it prints."""

    def __init__(self, project: Path, *args: str) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pytest_t2ibias", "label", "tiny.t2i.yaml", *args],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("t2ibias label: http://"):
                self.url = line.split()[2]
                return
        raise AssertionError("t2ibias label printed no address:\n" + "".join(self.lines))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def _judge_reading(png: bytes, file: str, cache: Path) -> str:
    """What toy-clip reads on the page's image, asked as the check asks it (the axis, through
    ``attributes``): the test's stand-in for a person's eye."""
    from PIL import Image

    from pytest_t2ibias._types import GeneratedImage, ImageSet
    from pytest_t2ibias.facade import T2IBias
    from pytest_t2ibias.suite_spec import AxisSpec

    picture = Image.open(io.BytesIO(png)).convert("RGB")
    t2i = T2IBias.standalone(vqa=str(REPO / "fixtures" / "toy-clip"), device="cpu",
                             cache_dir=str(cache))
    # keyed by its content hash (the file's name), as the run keys it: answers are cached by key
    images = ImageSet((GeneratedImage("page", 0, 0, picture, file, file),))
    axis = AxisSpec(name="gender", question="What is the gender (male, female) of the person?",
                    choices=("male", "female"))
    return axis.choices[int(t2i.attributes(images, axis).labels[0])]


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: "
                    "apt-get install chromium; .ci/run installs it)")
def test_labels_typed_on_the_page_calibrate_the_suite_fully(project, tmp_path):
    from playwright import sync_api as playwright  # the [test] extra: a dependency, not optional
    labels = project / "labels"
    server = LabelProcess(project, "--per-class", str(PER_CLASS))
    try:
        assert server.url.startswith("http://127.0.0.1:")
        assert "24 images from the cache, 0 generated" in "".join(server.lines)
        with playwright.sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM,
                                             args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 900, "height": 1000})
            page.goto(server.url)
            page.wait_for_selector("#picture[src^='/image/']")
            assert page.locator("#title").text_content() == f"Labelling for {HOSTILE}"
            assert page.title() == "t2ibias label" and page.locator("#title img").count() == 0
            assert page.locator("#progress").text_content().count(f"0 / {PER_CLASS}") == 2

            def shown() -> str:
                return page.locator("body").get_attribute("data-file") or ""

            def press(key: str) -> None:
                """A key, then wait for the page to show what the server answered."""
                shows = int(page.locator("body").get_attribute("data-shown") or 0)
                page.keyboard.press(key)
                page.wait_for_function("n => Number(document.body.dataset.shown) > n", arg=shows,
                                       timeout=30_000)

            skipped = shown()
            press("s")  # skip: asked again at the end, written nowhere
            assert shown() != skipped
            unsure = shown()
            press("x")  # cannot tell: a row no calibration reads
            wrong = shown()
            press("1")  # a slip ...
            press("u")  # ... taken back
            assert shown() == wrong
            typed: dict[str, str] = {}
            while shown():
                file = shown()
                png = urllib.request.urlopen(f"{server.url}image/{file}", timeout=30).read()
                value = _judge_reading(png, file, tmp_path / "judge-cache")
                typed[file] = value
                if len(typed) == 6:  # mid-way: an image, its keys and the progress (docs)
                    page.screenshot(path=str(tmp_path / "label-page.png"))
                press({"male": "1", "female": "2"}[value])
            assert page.locator("#question").text_content() == "Nothing left to label."
            browser.close()
    finally:
        server.stop()

    rows = [json.loads(line) for line in (labels / "index.jsonl").read_text().splitlines()]
    (unsure_row,) = [row for row in rows if row["file"] == unsure]
    assert unsure_row["cannot_tell"] == ["gender"] and "gender" not in unsure_row
    labelled = {row["file"]: row["gender"] for row in rows if "gender" in row}
    assert labelled == typed and len(typed) == 23  # 24 less the one nobody could tell
    assert skipped in typed  # skipped first, asked again last
    assert all((labels / file).is_file() for file in labelled)
    counts = {v: list(labelled.values()).count(v) for v in ("male", "female")}

    report = tmp_path / "run.json"
    run = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tiny.t2i.yaml",
                f"--t2i-json={report}"], project)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    rows = json.loads(report.read_text())["checks"]
    assert len(rows) == 2
    for row in rows:
        figures = row["figures"]
        assert figures["judge_correction"] == "full", row
        calibration = figures["judge_calibration"]
        assert calibration["source"] == "labelled folder" and str(labels) in calibration["where"]
        assert {c: a["n"] for c, a in calibration["accuracy"].items()} == counts
        assert "judge: corrected for the judge's confusion" in row["message"], row["message"]
    if os.environ.get("T2IBIAS_DOCS_SCREENS"):  # docs/screens/label-page.png, on request
        shutil.copy(tmp_path / "label-page.png", REPO / "docs" / "screens" / "label-page.png")


def _plan_lines(project: Path, cache: Path) -> list[str]:
    run = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tiny.t2i.yaml",
                "--t2i-plan", f"--t2i-cache-dir={cache}"], project)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [" ".join(line.split()) for line in run.stdout.splitlines()
             if "labelled calibration needs" in line]
    assert len(lines) == 2, run.stdout  # doctor and nurse
    return lines


def test_the_plan_says_how_many_labels_a_class_the_check_needs(project, tmp_path):
    # severity 0.9 on two classes is steep: the 95% spread of a 90% judge's calibration stays
    # above half the 0.1 margin even at 4096 labels a class (planner.labels_per_class)
    lines = _plan_lines(project, tmp_path / "empty-cache")
    assert all("its labelled calibration needs more than 4096 labels a class of gender "
               "(male, female) to decide at its margin, assuming a judge 90% right on every "
               "class (no measured calibration of it in the cache yet) (t2ibias label)" in line
               for line in lines), lines


def test_the_label_plan_reads_the_judge_the_cache_remembers(project, tmp_path):
    import numpy as np

    from pytest_t2ibias.metrics.judge import JudgeCalibration
    from pytest_t2ibias.store.calibrations import remember

    cache = tmp_path / "cache"
    remember(cache, JudgeCalibration(
        judge=f"VQA {REPO / 'fixtures' / 'toy-clip'}", axis="gender", choices=("male", "female"),
        counts=np.array([[18, 2], [5, 15]]), source="labelled folder", where="labels-by-alice/"))
    lines = _plan_lines(project, cache)
    assert all("to decide at its margin, for the judge as measured on labels-by-alice/, "
               "recorded 20" in line for line in lines), lines
