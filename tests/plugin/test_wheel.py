"""The wheel built from this checkout, installed in a virtual environment outside it, runs the
README's quick start as a user would (issue #43): the suite and the ``pyproject.toml`` blocks
written to a fresh project folder (the toy models named by absolute path), then the README's
``pytest`` and ``t2ibias`` command lines in order.

By default the test builds the wheel and installs it into a new venv without its dependencies,
borrowing this interpreter's site-packages (no network, no torch download; the plugin itself
is the wheel's copy, never this checkout's). ``.ci/run`` installs the wheel with all its
dependencies from the index into a fresh venv and points ``T2IBIAS_WHEEL_VENV`` at it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from PIL import Image
from support.quickstart import quickstart_blocks, quickstart_commands

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "pytest_t2ibias")






def _build_wheel(out: Path, scratch: Path) -> Path:
    """The wheel of a clean copy of the checkout (setuptools' in-tree build/ keeps deleted
    modules), built with this interpreter's setuptools, offline."""
    source = scratch / "source"
    for name in BUILD_INPUTS:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(out), str(source)], cwd=scratch, check=True, timeout=300)
    (wheel,) = out.glob("pytest_t2ibias-*.whl")
    return wheel


def _venv_with(wheel: Path, venv: Path) -> Path:
    """A venv holding the wheel; its dependencies read from this interpreter's site-packages
    by a path line (a plain path: that folder's own .pth files, such as an editable install of
    this checkout, are not run)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    # cwd outside the checkout: pip counts a checkout's *.egg-info as installed
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--no-deps", "--no-index", "--quiet", str(wheel)], cwd=venv.parent,
                   check=True, timeout=300)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True,
                             check=True).stdout.strip()
    Path(purelib, "zz_borrowed_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _user_project(folder: Path, readme: str) -> None:
    """The README's two files, the toy models for its models, fewer images for the test."""
    blocks = quickstart_blocks(readme)
    assert set(blocks) == {"fairness/occupations.t2i.yaml", "pyproject.toml"}, blocks.keys()
    suite = folder / "fairness" / "occupations.t2i.yaml"
    suite.parent.mkdir(parents=True)
    suite.write_text(blocks["fairness/occupations.t2i.yaml"])
    ini = blocks["pyproject.toml"]
    models = {"t2i_model": ROOT / "fixtures" / "toy-sd", "t2i_vqa": ROOT / "fixtures" / "toy-clip"}
    for key, path in models.items():
        ini, found = re.subn(rf'^{key} = ".*?"', f'{key} = "{path}"', ini, flags=re.M)
        assert found == 1, f"the README's pyproject.toml block no longer sets {key}"
    ini += "t2i_images_per_prompt = 8\nt2i_bootstrap = 200\nt2i_device = \"cpu\"\n"
    (folder / "pyproject.toml").write_text(ini)


def _argv(command: str, venv: Path, extra: list[str]) -> list[str]:
    words = shlex.split(command)
    if words[0] == "pytest":  # the venv's pytest, whether or not its script is installed
        return [str(venv / "bin" / "python"), "-m", "pytest", *words[1:], *extra]
    return [str(venv / "bin" / words[0]), *words[1:]]


def _clean_env() -> dict[str, str]:
    keep = {key: value for key, value in os.environ.items()
            if not key.startswith(("PYTEST_", "PYTHON", "VIRTUAL_ENV"))}
    return {**keep, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.mark.slow  # a wheel build, a venv and three toy runs: about a minute
def test_the_readme_quick_start_runs_from_the_installed_wheel(tmp_path):
    readme = README.read_text(encoding="utf-8")
    given = os.environ.get("T2IBIAS_WHEEL_VENV")
    if given:
        venv = Path(given)
    else:
        wheel = _build_wheel(tmp_path / "dist", tmp_path / "build")
        venv = _venv_with(wheel, tmp_path / "venv")
    project = tmp_path / "project"
    project.mkdir()
    _user_project(project, readme)
    env = _clean_env()

    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import pytest_t2ibias; print(pytest_t2ibias.__file__)"],
                           cwd=project, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout  # the wheel's copy

    commands = quickstart_commands(readme)
    assert [c.split()[0] for c in commands] == ["pytest", "pytest", "pytest", "t2ibias"], commands
    extras = [["-p", "no:cacheprovider"], ["-p", "no:cacheprovider", "--t2i-markdown=summary.md"],
              ["-p", "no:cacheprovider"], []]
    runs = []
    for command, extra in zip(commands, extras):
        done = subprocess.run(_argv(command, venv, extra), cwd=project, env=env,
                              capture_output=True, text=True, timeout=600)
        runs.append(done)
        # the toy models plant the bias these checks look for: failures (1), never an error
        assert done.returncode in (0, 1), (command, done.stdout[-3000:], done.stderr[-3000:])
        assert "Traceback" not in done.stderr, done.stderr[-3000:]

    plan, first, compared, cli = runs
    assert plan.returncode == 0 and "t2ibias: plan" in plan.stdout
    assert "3 failed" in first.stdout and "error" not in first.stdout.splitlines()[-1]
    saved = json.loads((project / ".t2ibias" / "runs" / "baseline.json").read_text())
    assert {row["status"] for row in saved["checks"]} == {"failed"} and len(saved["checks"]) == 3
    page = (project / "fairness.html").read_text(encoding="utf-8")
    assert page.count("<image ") >= 3 and "gender_balance" in page  # each image inlined once
    summary = (project / "summary.md").read_text(encoding="utf-8")
    assert r"gender\_balance" in summary and "(<fairness.html>)" in summary  # markdown-escaped
    assert "0 images generated" in compared.stdout.replace(",", "")  # all from the cache
    assert "baseline" in compared.stdout and compared.returncode == 1  # failed checks, no drift
    assert cli.returncode == 0 and "no figure drifted" in cli.stdout

    # the editor schema, from the installed wheel's console script
    schema = subprocess.run([str(venv / "bin" / "t2ibias"), "schema"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    assert schema.returncode == 0 and "$schema" in json.loads(schema.stdout), schema.stderr

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:  # the report a user opens draws: text, badges and thumbnails, not a blank page
        shot = tmp_path / "report.png"
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}",
                        f"--screenshot={shot}", "--window-size=1200,1500",
                        (project / "fairness.html").as_uri()],
                       capture_output=True, text=True, timeout=180)
        with Image.open(shot) as image:
            assert len(image.convert("RGB").getcolors(maxcolors=1 << 20)) > 200


def test_the_wheel_ships_the_licence_the_types_marker_and_the_command(tmp_path):
    wheel = _build_wheel(tmp_path / "dist", tmp_path / "build")
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names
                            if n.endswith(".dist-info/entry_points.txt"))
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert "pytest_t2ibias/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "pytest_t2ibias/data/t2i-suite.schema.json" in names
    assert not any(n.startswith(("tests/", "docgen/", "toyworld/", "fixtures/")) for n in names)
    assert "t2ibias = pytest_t2ibias.__main__:main" in entry_points
    assert "t2ibias = pytest_t2ibias.plugin" in entry_points
    assert "License-Expression: Apache-2.0" in metadata
    for classifier in ("Framework :: Pytest", "Typing :: Typed",
                       "Topic :: Scientific/Engineering :: Artificial Intelligence"):
        assert f"Classifier: {classifier}" in metadata
