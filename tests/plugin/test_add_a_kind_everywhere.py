"""A new kind is one module and one registry entry (issue #42): written into a copy of the
package, with no other file touched, it is validated, planned, prefetched, reported (table,
JSON, HTML, JUnit), charted, documented, and in the lists the architecture and integrity
tests read from the registry."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from support.added_kind import MODULE

ROOT = Path(__file__).resolve().parents[2]

KIND_MODULE = (textwrap.dedent(MODULE)
               .replace('    name="first_share_below",\n',
                        '    name="first_share_below",\n    sample="axes: [gender], threshold: 0.9",\n')
               # inside the package, as the built-in kinds import (the registry imports it)
               .replace("from pytest_t2ibias.figures import", "from ..figures import")
               .replace("from pytest_t2ibias.kinds import CheckKind, Params, param, planned",
                        "from ._base import CheckKind\nfrom ._params import Params, param\n"
                        "from ._work import planned")
               .replace("from pytest_t2ibias.kinds.entropy_below import", "from .entropy_below import")
               # a shared validator: the JSON Schema knows it (a new one declares it: params.constraint)
               .replace("check=check_share)", "check=check_unit_interval)")
               .replace("from ._params import Params, param",
                        "from ._params import Params, check_unit_interval, param"))

CONFTEST = '''
import numpy as np
import pytest
from PIL import Image


class Painter:
    fingerprint = "painter-v1"

    def generate(self, requests):
        return [Image.new("RGB", (4, 4), (r.noise_seed % 251, 0, 0)) for r in requests]


class Scorer:
    fingerprint = "scorer-v1"

    def score(self, images, question, choices, statements=None):
        return np.array([[0.2, 0.8] if i % 4 else [0.8, 0.2] for i in range(len(images))])


@pytest.hookimpl(tryfirst=True)
def pytest_t2ibias_make_generator(config, model, role, options):
    return Painter()


@pytest.hookimpl(tryfirst=True)
def pytest_t2ibias_make_vqa(config, model):
    return Scorer()
'''

SUITE = """\
suite: purple
defaults: {images_per_prompt: 8, seed: 0}
judge_correction: off
prompt: "a photo of a {subject}"
subjects: [mug]
axes:
  colour:
    question: "What colour is the mug?"
    choices: [purple, green]
checks:
  - {id: mostly_not_purple, kind: first_share_below, axes: [colour], threshold: 0.9,
     confidence: 0.95}
"""

SCRIPT = '''
import json, sys
from pathlib import Path

import pytest_t2ibias
assert Path(pytest_t2ibias.__file__).parent == Path(sys.argv[1]), pytest_t2ibias.__file__

from pytest_t2ibias.kinds import BUILTIN_KINDS, CHECK_KINDS
from pytest_t2ibias.testing.suites import every_kind_suite
sys.path.insert(0, sys.argv[2])  # the repository: its docs generator and architecture test
sys.path.insert(0, sys.argv[2] + "/tests")
from docgen.reference import markdown_reference, schema_text
from support.package_layout import registered_kinds

print(json.dumps({
    "builtin": list(BUILTIN_KINDS),
    "architecture": list(registered_kinds(Path(sys.argv[1]))),
    "integrity": "kind: first_share_below" in every_kind_suite(BUILTIN_KINDS),
    "reference": "first_share_below" in markdown_reference(),
    "schema": "first_share_below" in schema_text(),
}))
'''


def _package_with_the_kind(tmp_path: Path) -> Path:
    """A copy of the package with the kind's module and its registry entry: nothing else."""
    copy = tmp_path / "site" / "pytest_t2ibias"
    shutil.copytree(ROOT / "pytest_t2ibias", copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "kinds" / "first_share_below.py").write_text(KIND_MODULE)
    registry = copy / "kinds" / "__init__.py"
    before = registry.read_text().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(before) if line == '    "erasure",\n']
    registry.write_text("".join(before[:at + 1] + ['    "first_share_below",\n'] + before[at + 1:]))
    return copy


def test_a_kind_added_in_one_module_and_its_registry_entry_is_everywhere(tmp_path):
    package = _package_with_the_kind(tmp_path)
    # the whole edit: one new module, and one added line in kinds/__init__.py
    old = (ROOT / "pytest_t2ibias" / "kinds" / "__init__.py").read_text().splitlines()
    new = (package / "kinds" / "__init__.py").read_text().splitlines()
    assert [line for line in difflib.ndiff(old, new) if line[:2] in ("- ", "+ ")] \
        == ['+     "first_share_below",']
    original = {p.relative_to(ROOT / "pytest_t2ibias")
                for p in (ROOT / "pytest_t2ibias").rglob("*.py") if "__pycache__" not in p.parts}
    assert {p.relative_to(package) for p in package.rglob("*.py")} - original \
        == {Path("kinds/first_share_below.py")}
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    (project / "purple.t2i.yaml").write_text(SUITE)
    env = {**os.environ, "PYTHONPATH": str(package.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)

    lists = subprocess.run([sys.executable, "-c", SCRIPT, str(package), str(ROOT)], cwd=project,
                           env=env, capture_output=True, text=True)
    assert lists.returncode == 0, lists.stderr[-3000:]
    found = json.loads(lists.stdout.strip().splitlines()[-1])
    assert found["builtin"][-1] == "first_share_below"
    assert found["architecture"] == found["builtin"]  # the architecture test's list
    assert found["integrity"] and found["reference"] and found["schema"]

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--t2i-model=m", "--t2i-vqa=v", "--t2i-bootstrap=50", "--t2i-plan"],
        cwd=project, env=env, capture_output=True, text=True)
    assert "purple.t2i.yaml::mostly_not_purple[mug-colour]" in run.stdout, run.stdout[-3000:]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--t2i-model=m", "--t2i-vqa=v", "--t2i-bootstrap=50", "--t2i-json=report.json",
         "--t2i-html=report.html", "--junitxml=junit.xml", f"--t2i-cache-dir={tmp_path / 'c'}"],
        cwd=project, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "work: 8 images generated" in run.stdout  # prefetched once, judged from the memo
    table = run.stdout.split("t2ibias: bias checks")[1]
    assert "mostly_not_purple" in table and "pass" in table
    (row,) = json.loads((project / "report.json").read_text())["checks"]
    assert (row["check"], row["status"]) == ("first_share_below", "passed")
    page = (project / "report.html").read_text()
    assert "mostly_not_purple" in page and "first share, as charted" in page  # its chart
    assert "mostly_not_purple" in (project / "junit.xml").read_text()
