"""The conftest and suite of a pytester project that collects a suite file."""

from __future__ import annotations

CONFTEST = """
from pathlib import Path
import pytest

from pytest_t2ibias._session import session_of
from pytest_t2ibias._types import Estimate
from pytest_t2ibias.errors import BackendError
from pytest_t2ibias.kinds import CHECK_KINDS, NUMBER, CheckKind, Param, register_check
from pytest_t2ibias.verdict import Verdict


def run_share(ctx):
    assert ctx.plan.images_per_prompt == 16 and ctx.instrument.plan is ctx.plan
    Path("ran.txt").open("a").write(f"{{ctx.subject}}-{{ctx.axis.name}}\\n")
    share = ctx.check.params.share
    if share == 0.5:
        raise KeyError("a bug in a check kind")
    if share < 0:
        raise BackendError("cannot load model 'nowhere/model' (--t2i-model): not found")
    passed = share <= ctx.check.params.threshold
    return Verdict(outcome="pass" if passed else "fail", check="fake_share", value=Estimate(share, share - 0.1, share + 0.1, 48),
                   threshold=ctx.check.params.threshold, figures={{"label": ctx.subject}},
                   message=f"share of {{ctx.axis.name}} for {{ctx.subject}} is {{share}} > threshold")


def run_whole(ctx):
    return Verdict(outcome="pass", check="fake_whole", value=Estimate(0.0, 0.0, 0.0, 1),
                   threshold=1.0, message="ok")


for kind in (
    CheckKind("fake_share", run=run_share,
              params=(Param("axes", (list,)), Param("threshold", NUMBER, required=True),
                      Param("share", NUMBER, default=0.0))),
    CheckKind("fake_whole", run=run_whole, axes_param=None),
):
    CHECK_KINDS.pop(kind.name, None)  # kinds are process-global: this conftest's own win
    register_check(kind)


def pytest_sessionfinish(session):
    Path("backends_built.txt").write_text(str(session_of(session.config).started))
"""


SUITE = """\
suite: occupations
prompt: "A photo of a {subject}"
subjects: [doctor, nurse]
axes:
  gender: {question: "Gender?", choices: [male, female]}
  age: {question: "Age?", choices: [young, old]}
checks:
  - {id: severity, kind: fake_share, axes: [gender, age], threshold: 0.5, share: 0.2}
  - {id: skewed, kind: fake_share, axes: [gender], threshold: 0.5, share: 0.9,
     subjects: [nurse], marks: [slow]}
  - {id: whole, kind: fake_whole}
"""


