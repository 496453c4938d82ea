"""``python -m pytest_t2ibias prefetch``: fill the cache so the pytest run generates nothing,
in one process or split between processes by ``accelerate launch``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_t2ibias.testing import make_tiny_clip, make_tiny_pipeline

WORDS = "a photo of an doctor nurse male female young old person".split()

SUITE = """\
suite: tiny
defaults: {images_per_prompt: 4, seed: 0, steps: 2}
prompt: "a photo of a {subject}"
subjects: [doctor, nurse]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age (young, old) of the person?"
    choices: [young, old]
checks:
  - {id: lenient, kind: entropy_below, axes: [gender, age], threshold: 1.0}
  - {id: spillover, kind: is_nonnegative, mitigate: [gender], on: [age], tolerance: 1.0}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("prefetch")
    sd = make_tiny_pipeline(root / "sd", words=WORDS)
    clip = make_tiny_clip(root / "clip", words=WORDS)
    (root / "tiny.t2i.yaml").write_text(SUITE)
    (root / "pytest.ini").write_text(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {sd}
        t2i_vqa = {clip}
        t2i_device = cpu
        t2i_bootstrap = 200
        # random-weight judges read nothing: every calibration would say "cannot read"
        t2i_judge_correction = off
    """))
    return root


def _run(args: list[str], cwd: Path, **extra_env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", **extra_env}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _pytest_afterwards(project: Path, cache: Path) -> dict:
    report = cache.parent / f"{cache.name}.json"
    run = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tiny.t2i.yaml",
                f"--t2i-cache-dir={cache}", f"--t2i-json={report}"], project)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(report.read_text())["work"]


def test_prefetch_fills_the_cache_and_pytest_generates_nothing(project):
    cache = project / "cache-one"
    run = _run([sys.executable, "-m", "pytest_t2ibias", "prefetch", "tiny.t2i.yaml",
                f"--t2i-cache-dir={cache}"], project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "6 checks planned; 24 images generated" in run.stdout
    work = _pytest_afterwards(project, cache)
    assert work["images_generated"] == 0 and work["answers_scored"] == 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("accelerate", path=str(Path(sys.executable).parent)) is None,
                    reason="accelerate's launcher is not installed")
def test_prefetch_split_between_two_processes_by_accelerate(project):
    cache = project / "cache-two"
    launcher = str(Path(sys.executable).parent / "accelerate")
    # `accelerate launch --cpu` starts one process (CPU multi-process there means MPI); the
    # torchrun launcher with ACCELERATE_USE_CPU starts two that meet over gloo (MULTI_CPU).
    run = _run([launcher, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "pytest_t2ibias",
                "prefetch", "tiny.t2i.yaml", f"--t2i-cache-dir={cache}"], project,
               ACCELERATE_USE_CPU="1")
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line for line in run.stdout.splitlines() if line.startswith("prefetch[")]
    assert len(lines) == 2, run.stdout
    generated = [int(line.split("; ")[1].split()[0]) for line in lines]
    assert generated == [12, 12]  # each image once, split evenly by split_between_processes
    work = _pytest_afterwards(project, cache)
    assert work["images_generated"] == 0 and work["answers_scored"] == 0


def test_prefetch_runs_without_the_terminal_plugin(tmp_path):
    # get_plugin("terminalreporter") is None under -p no:terminal: its line went to None (#42)
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    run = _run([sys.executable, "-m", "pytest_t2ibias", "prefetch", "-p", "no:terminal",
                f"--t2i-cache-dir={tmp_path / 'cache'}"], tmp_path)
    assert "INTERNALERROR" not in run.stdout + run.stderr
    assert run.returncode == 0, run.stdout + run.stderr
