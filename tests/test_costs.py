"""Issue #38's must-show: a planted bad debiasing fine-tune (``swapped:`` in the root conftest:
a nurse drawn for a doctor in half the images) passes today's bias gate and is refused by the
cost checks, on the toy world, cold, at 64 images a model."""

from __future__ import annotations

import json
import os
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
