"""One status in one place (issue #42), in a run: each row's status, derived from its
verdict and its item's xfail mark (``verdict.status``), is pytest's word for the item."""

from __future__ import annotations

import json

import pytest

from pytest_t2ibias.kinds import CHECK_KINDS

CONFTEST = '''
import pytest

from pytest_t2ibias._types import Estimate
from pytest_t2ibias.kinds import CHECK_KINDS, NUMBER, CheckKind, Param, register_check
from pytest_t2ibias.verdict import Verdict


def run(ctx):
    share = ctx.check.params.share
    return Verdict(outcome="pass" if share <= 0.5 else "fail", check="status_share",
                   value=Estimate(share, share, share, 8), threshold=0.5, message="share")


CHECK_KINDS.pop("status_share", None)
register_check(CheckKind("status_share", run=run, axes_param=None,
                         params=(Param("share", NUMBER, required=True),)))
'''

SUITE = """\
suite: marks
prompt: "a photo of a {subject}"
subjects: [doctor]
axes:
  gender: {question: "Gender?", choices: [male, female]}
checks:
  - {id: planted_and_found, kind: status_share, share: 0.9, marks: [xfail]}
  - {id: planted_but_gone, kind: status_share, share: 0.1, marks: [xfail]}
  - {id: fair, kind: status_share, share: 0.1}
"""


@pytest.mark.parametrize("strict", [False, True], ids=["xfail", "xfail_strict"])
def test_a_runs_rows_say_what_pytest_said(pytester, strict):
    """Each row's derived status is pytest's word for its item, xfail_strict's XPASS (a
    planted bias that no longer shows) included: the JSON and the JUnit property agree."""
    pytester.makeconftest(CONFTEST)
    pytester.makeini(f"[pytest]\nxfail_strict = {str(strict).lower()}\n")
    pytester.makefile(".t2i.yaml", marks=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-json=report.json")
    gone = "failed" if strict else "xpassed"
    result.assert_outcomes(**{"passed": 1, "xfailed": 1, "failed" if strict else "xpassed": 1})
    rows = {row["check_id"]: row["status"] for row in
            json.loads((pytester.path / "report.json").read_text())["checks"]}
    assert rows == {"planted_and_found": "xfailed", "planted_but_gone": gone, "fair": "passed"}
    CHECK_KINDS.pop("status_share", None)  # kinds are process-global
