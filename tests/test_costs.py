"""Issue #38's must-show: a planted bad debiasing fine-tune (``swapped:`` in the root conftest:
a nurse drawn for a doctor in half the images) passes today's bias gate and is refused by the
cost checks, on the toy world, cold, at 64 images a model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_fine_tune_that_draws_another_subject_passes_the_bias_gate_and_not_the_costs(tmp_path):
    report = tmp_path / "run.json"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "example_suites/toy_bad_finetune.t2i.yaml",
         "-p", "no:cacheprovider", "-p", "no:xdist", "-q", f"--t2i-cache-dir={tmp_path / 'cache'}",
         f"--t2i-json={report}"],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
        timeout=900)
    assert run.returncode == 0, run.stdout[-3000:]  # xfail_strict: the planted failure failed
    checks = {c["check_id"]: c for c in json.loads(report.read_text())["checks"]}
    assert checks["gender_balance"]["outcome"] == "pass"
    assert checks["merge_gate"]["outcome"] == "pass"
    alignment = checks["prompt_alignment"]
    assert alignment["status"] == "xfailed" and alignment["outcome"] != "pass"
    assert alignment["value"] < 0  # the candidate draws doctors that read less like doctors


def _plan(tmp_path: Path, name: str, text: str) -> tuple[int, int, int, int]:
    """``--t2i-plan`` of one suite: (images, answers) the checks expect, each shared one once,
    and (images, items) summed item by item."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "gate.t2i.yaml").write_text(text.replace("../fixtures/", f"{ROOT / 'fixtures'}/"))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(folder), "--t2i-plan", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
         f"--t2i-cache-dir={tmp_path / 'cache'}"],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
        timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    shared = re.search(r"the checks expect ([\d,]+) images and ([\d,]+) answers", run.stdout)
    summed = re.search(r"(\d+) images in (\d+) items with a known count", run.stdout)
    assert shared and summed, run.stdout[-3000:]
    return (int(shared.group(1).replace(",", "")), int(shared.group(2).replace(",", "")),
            int(summed.group(1)), int(summed.group(2)))


def test_the_merge_gates_cost_checks_plan_no_image_and_no_answer_of_their_own(tmp_path):
    """Issue #38: the cost checks of toy_merge_gate read the gate's own images (same prompts,
    seed, steps and 200 images a model), so the plan's shared count is the same without them;
    summed item by item it grows by their 12 items x 400 images."""
    text = (ROOT / "example_suites" / "toy_merge_gate.t2i.yaml").read_text(encoding="utf-8")
    marker = "  # What the fine-tune cost (issue #38)"
    assert marker in text, "toy_merge_gate.t2i.yaml no longer carries the cost checks"
    with_costs = _plan(tmp_path, "with", text)
    without = _plan(tmp_path, "without", text.split(marker, 1)[0])
    assert with_costs[:2] == without[:2]
    assert (with_costs[2] - without[2], with_costs[3] - without[3]) == (12 * 400, 12)
