"""A suite file as a pytest collector: validating it is its collection.

Its own small module (tavern's ``file.py`` beside its ``item.py``, here ``collect.py``):
pytest makes a node for every suite file of a directory it walks, even when the command
line picked a test beside it, so the YAML loader, the check kinds and the items load only
when a suite is collected (issue #14).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .._settings import Settings
    from ..suite_spec import Suite
    from .check import CheckItem


class SuiteFile(pytest.File):
    """One suite file; validating it is its collection."""

    suite: Suite | None = None

    def collect(self) -> Iterator[CheckItem]:
        from .._session import session_of
        from ..kinds import CHECK_KINDS
        from ..planner import PlanningBudget, plan_check
        from ..suite.load import load_suite
        from .check import CheckItem, item_name

        self.suite = suite = load_suite(self.path)
        self.planning_budget = PlanningBudget()  # collection ends, whatever auto asks
        self._check_marks(suite)
        settings = session_of(self.config).settings
        check_judge_texts(suite, settings)
        for check in suite.checks:
            plan = plan_check(settings, suite, check, self.planning_budget)
            if not CHECK_KINDS[check.kind].per_subject:
                yield CheckItem.from_parent(self, name=check.id, suite=suite, check=check,
                                            subject="", axis=None, plan=plan)
                continue
            for subject in check.subjects:
                for axis in check.axes or (None,):
                    yield CheckItem.from_parent(self, name=item_name(check, subject, axis),
                                                suite=suite, check=check, subject=subject,
                                                axis=axis, plan=plan)

    def _check_marks(self, suite: Suite) -> None:
        """Unregistered marks under ``--strict-markers`` become suite errors with the check's line."""
        from ..errors import SuiteError

        problems = []
        for check in suite.checks:
            for mark in check.marks:
                try:
                    getattr(pytest.mark, mark)
                except pytest.fail.Exception as exc:
                    problems.append(SuiteError(self.path, check.location.line,
                                               f"check {check.id!r}: mark {exc.msg}"))
                except AttributeError as exc:  # ``_x``: the loader refuses it; a backstop
                    problems.append(SuiteError(self.path, check.location.line,
                                               f"check {check.id!r}: mark {mark!r}: {exc}"))
        if problems:
            raise SuiteError.combine(problems)

    # pytest's own Collector.repr_failure drops Node's ``style`` the same way (and ignores it)
    def repr_failure(  # type: ignore[override]
            self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        from ..errors import SuiteError

        if isinstance(excinfo.value, SuiteError) and not self.config.getoption("fulltrace", False):
            return excinfo.value.render(relative_to=self.config.rootpath)
        return super().repr_failure(excinfo)


def check_judge_texts(suite: Suite, settings: Settings) -> None:
    """Every text the VQA judge scores, read by its tokenizer before any image is made
    (issue #36): statements it reads as the same tokens are a ``SuiteError`` at the axis'
    line; words it cannot read, a ``JudgeTextWarning``. Readings come from the memo beside
    the cache, so a warm run loads no tokenizer; a judge not on disk is not checked, and one
    whose tokenizer cannot be read is said so (a ``JudgeTextWarning``), not skipped quietly."""
    import warnings

    from ..backends.judge_texts import (
        JudgeTextWarning,
        is_contrastive,
        same_readings,
        scored_questions,
        unread_in_statements,
    )
    from ..backends.readings import memo_folder, model_reader
    from ..errors import SuiteError

    judge = settings.vqa
    contrastive = is_contrastive(judge)
    reader = model_reader(judge, memo_folder(settings.cache_dir, settings.no_cache))
    if judge is None or contrastive is None or reader is None:
        return
    problems = []
    for question in scored_questions(suite, contrastive=contrastive,
                                     classified=settings.classifiers):
        line = question.location.line if question.location else 1
        try:
            same = same_readings(question, reader, judge)
            unread = unread_in_statements(question, reader, judge)
        except Exception as error:  # any tokenizer's failure: said, not hidden
            warnings.warn_explicit(JudgeTextWarning(
                f"the judge {settings.vqa}'s tokenizer cannot be read ({type(error).__name__}: "
                f"{error}): the texts it scores were not checked before the run"),
                JudgeTextWarning, filename=str(suite.path), lineno=line)
            return
        if same:
            problems.append(SuiteError(suite.path, line, same))
        elif unread:
            # shown at the suite's line, not ours (pytest's warning summary names the place)
            warnings.warn_explicit(JudgeTextWarning(unread), JudgeTextWarning,
                                   filename=str(suite.path), lineno=line)
    if problems:
        raise SuiteError.combine(problems)
