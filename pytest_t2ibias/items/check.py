"""YAML suites as pytest items: one ``CheckItem`` per check x subject x axis.

Follows tavern (``tavern/_core/pytest/file.py``, ``item.py``): the file (``file.SuiteFile``)
validates in ``collect()``, so a malformed suite is a collection error before any model
loads, and the items only touch the models when they run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._session import VERDICTS, session_of
from .._text import shown
from ..errors import ClassifierMissing
from ..kinds import CHECK_KINDS
from ..plan import Plan
from ..suite_spec import CheckSpec, Suite
from ..verdict import CheckFailed, Verdict, report_verdict

if TYPE_CHECKING:
    from ..kinds import PlannedItem

ITEM_MARKER = "t2ibias"


def item_name(check: CheckSpec, subject: str, axis: str | None) -> str:
    """``severity[doctor-gender]``, or ``severity[doctor]`` for kinds without axes; user text
    in it shown, never obeyed (node ids reach pytest's headers and every log)."""
    name = f"{check.id}[{subject}-{axis}]" if axis else f"{check.id}[{subject}]"
    return shown(name)


class CheckItem(pytest.Item):
    """One check judged for one subject (and axis): runs the kind, reports its verdict."""

    def __init__(self, *, suite: Suite, check: CheckSpec, subject: str, axis: str | None,
                 plan: Plan, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.check = check
        self.subject = subject
        self.axis = axis
        self.plan = plan
        """How this check samples, resolved at collection (``plan.plan_for``)."""
        self.verdict: Verdict | None = None
        self.report_subject, self.report_axis = subject, axis or ""
        self.add_marker(ITEM_MARKER)
        for mark in check.marks:
            self.add_marker(mark)
        # -k also matches the kind and the suite name: -k entropy_below, -k occupations
        self.extra_keyword_matches.update({check.kind, suite.name})
        session_of(self.config).plan.register(self)  # the session plan's entry (#42)

    def runtest(self) -> None:
        """Judge: raise the plan entry's error, evaluate at its gate and stopping point (the
        session plan ran everything else before the first item), report."""
        from .._test_call import Sightings
        from ..figures import with_gallery

        plan = session_of(self.config).plan
        sightings = Sightings()
        verdict = plan.verdict(plan.by_nodeid[self.nodeid], sightings)
        shown = with_gallery(verdict, sightings)  # the images its judges saw, for the report
        reported = self.stash.get(VERDICTS, [])
        for i, earlier in enumerate(reported):
            if earlier is verdict:  # an ``assert_*`` helper in the run reported it already
                reported[i] = shown
                break
        else:
            report_verdict(shown)
        self.verdict = shown
        if not shown.passed:
            raise CheckFailed(shown)

    def _require_classifiers(self) -> None:
        """An axis the suite marks ``classifier: true`` must not quietly be read by VQA.

        Checked when the item runs, not at collection: ``--collect-only`` and the checks of
        other axes stay usable on a machine without the classifier.
        """
        configured = set(session_of(self.config).settings.classifiers)
        for name in self._axes_read():
            axis = self.suite.axes.get(name)
            if axis is not None and axis.classifier and name not in configured:
                raise ClassifierMissing(
                    f"axis {name!r} says classifier: true, but no classifier "
                    f"is configured for it (configured: {', '.join(sorted(configured)) or 'none'})"
                    f"; add --t2i-classifier={name}=PATH (or the ini key t2i_classifier), or "
                    f"remove classifier: true to let the VQA model read it")

    def _axes_read(self) -> list[str]:
        """The item's axis, the check's axes and every axis its parameters name."""
        names = [self.axis, *self.check.axes, *self.check.params.axes_named()]
        return [name for name in dict.fromkeys(names) if isinstance(name, str)]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        error = excinfo.value
        if self.config.getoption("fulltrace", False):
            return super().repr_failure(excinfo, style)
        if isinstance(error, CheckFailed):
            return shown(f"{self.where()}: {self.title()} failed\n{error.verdict.message}",
                         keep_newlines=True)
        if _raised_by_plugin(error):
            # Expected trouble (a model that will not load, a backend refusing): one paragraph.
            return shown(f"{self.where()}: {self.title()} could not run: "
                         f"{type(error).__name__}: {error}", keep_newlines=True)
        return super().repr_failure(excinfo, style)

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """An unexpected error's traceback starts at the kind's ``run``, not inside pytest."""
        traceback = excinfo.traceback
        kind = CHECK_KINDS.get(self.check.kind)
        code = getattr(kind.run if kind else None, "__code__", None)
        if code is not None:
            traceback = traceback.cut(path=code.co_filename, firstlineno=code.co_firstlineno - 1)
        return traceback.filter(excinfo)

    # -- what the session plan reads (``session_plan.Plannable``) --------------------------

    def as_written(self) -> PlannedItem:
        """This item as its suite writes it, whether or not it will run."""
        from ..kinds import PlannedItem

        return PlannedItem(self.suite, self.check, self.subject,
                           self.suite.axes[self.axis] if self.axis else None, self.plan)

    def will_run(self) -> bool:
        return not (any(self.iter_markers("skip")) or any(self.iter_markers("skipif")))

    def refusal(self) -> BaseException | None:
        try:
            self._require_classifiers()
        except ClassifierMissing as missing:
            return missing
        return None

    def as_planned(self) -> PlannedItem | None:
        """This item as the plan sees it; None when it will not run."""
        return self.as_written() if self.will_run() and self.refusal() is None else None

    @property
    def gated(self) -> bool:
        """Whether this check gates on an interval (counts in the family, ``--t2i-family``)."""
        return self.plan.levels.gate is not None

    def reportinfo(self) -> tuple[Path, int, str]:
        """Suite path, the check's 0-based line (pytest's convention), ``suite::id[...]``."""
        return self.path, self.check.location.line - 1, shown(f"{self.suite.name}::{self.name}")

    def where(self) -> str:
        """``path:line`` of the check entry, relative to the rootdir when inside it."""
        path = self.check.location.path
        try:
            relative = os.path.relpath(path, self.config.rootpath)
        except ValueError:  # another drive on Windows
            relative = str(path)
        if relative.startswith(".."):
            relative = str(path)
        return f"{relative}:{self.check.location.line}"

    def title(self) -> str:
        axis = f", axis {self.axis!r}" if self.axis else ""
        subject = f" for subject {self.subject!r}" if self.subject else ""
        return f"check {self.check.id!r} ({self.check.kind}){subject}{axis}"


def _raised_by_plugin(error: BaseException) -> bool:
    """An exception class of our own (BackendError and kin) rather than a bug's ``KeyError``."""
    return type(error).__module__.split(".")[0] == "pytest_t2ibias"
