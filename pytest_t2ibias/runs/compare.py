"""Two runs' figures side by side: what moved, by how much, and whether it drifted.

A run is the JSON report (docs/report-schema.md, version 2) as a dict: its ``run`` header and
its ``checks``. Checks are matched by (nodeid, subject, about); checks left over on both
sides are then matched by (check id, subject, about), so a suite file that moved still
compares. Each matched check contributes its headline figure (``value`` with ``low..high``)
and every named estimate inside its ``figures`` (``effect.age``, ``pairs.gender->age``,
``lift.neutral`` ...; estimates inside lists are positional and are left out).

Drift criteria (``--t2i-compare-fail``, ``compare --fail``), pytest-benchmark's
``--benchmark-compare-fail`` for fairness figures:

- ``value:X``: the figure moved by more than X (absolute);
- ``value:X%``: it moved by more than X% of the saved figure's size (a saved 0 allows none);
- ``ci``: its new interval does not overlap the saved one (see ``Criterion.drifted``).

A figure that one run has and the other could not compute (NaN: an error, no answered image)
drifted under every criterion. Pure data: no pytest, no terminal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import CriterionError
from ..reports.rows import ReportRow

HEADLINE = "value"
"""The name of a check's own figure (the one its verdict judged)."""


@dataclass(frozen=True)
class Figure:
    """One estimate of one run: point value and interval (None where it was not computed)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None

    @property
    def missing(self) -> bool:
        return self.value is None

    def interval(self) -> tuple[float, float]:
        """``low..high``; a figure saved without an interval is the point ``value..value``."""
        assert self.value is not None
        if self.low is None or self.high is None:
            return self.value, self.value
        return self.low, self.high


@dataclass(frozen=True)
class Criterion:
    """One drift rule: ``kind`` is ``value`` (with ``amount``, ``relative``) or ``ci``."""

    text: str
    kind: str
    amount: float = 0.0
    relative: bool = False

    def drifted(self, old: Figure, new: Figure) -> bool:
        """Whether ``new`` drifted from ``old`` under this rule.

        ``ci`` asks that the two intervals do not overlap (touching ends overlap). Why not
        "the new point lies outside the saved interval": two runs of an unchanged model on
        different seeds give a new point outside the old 95% interval for about one figure in
        six (their difference has sqrt(2) times a single estimate's spread, so the point
        leaves the interval when the difference exceeds 1.96/sqrt(2) = 1.39 spreads), which
        is a false alarm on almost every run of a suite. Two 95% intervals of equal width
        fail to overlap only when the difference exceeds 2 x 1.96/sqrt(2) = 2.77 of its own
        spreads: about 0.6% of figures of an unchanged model (Schenker & Gentleman 2001,
        "On judging the significance of differences by examining the overlap between
        confidence intervals"), so a ``ci`` alarm is a change worth reading. It is
        conservative (a real change of about two spreads may overlap): add ``value:X`` for the
        size of change that must fail whatever the noise. On the same seeds and a warm cache
        an unchanged model reproduces every figure exactly, so no rule fires at all.
        """
        if old.missing or new.missing:
            return old.missing != new.missing
        assert old.value is not None and new.value is not None
        if self.kind == "ci":
            old_low, old_high = old.interval()
            new_low, new_high = new.interval()
            return new_low > old_high or new_high < old_low
        moved = abs(new.value - old.value)
        limit = self.amount * abs(old.value) / 100 if self.relative else self.amount
        return moved > limit + 1e-12  # a figure exactly at the limit is within it


def parse_criterion(text: str) -> Criterion:
    """``ci``, ``value:0.05`` or ``value:10%``; a ``CriterionError`` saying what is accepted."""
    spelled = text.strip().lower()
    if spelled == "ci":
        return Criterion(text, "ci")
    kind, sep, amount = spelled.partition(":")
    if kind == "value" and sep:
        relative = amount.endswith("%")
        try:
            number = float(amount.removesuffix("%"))
        except ValueError:
            number = math.nan
        if math.isfinite(number) and number >= 0:
            return Criterion(text, "value", number, relative)
    raise CriterionError(
        f"{text!r} is not a drift criterion; use ci (the new interval does not overlap the "
        f"saved one), value:X (moved by more than X, e.g. value:0.05) or value:X% (by more "
        f"than X% of the saved figure, e.g. value:10%)")


def parse_criteria(texts: Iterable[str]) -> tuple[Criterion, ...]:
    return tuple(parse_criterion(text) for text in texts)


@dataclass(frozen=True)
class FigureChange:
    """One figure in both runs: old -> new, and the criteria under which it drifted."""

    check: str
    """The check's id (a Python test: its name); ``nodeid`` says exactly which item."""
    nodeid: str
    subject: str
    about: str
    figure: str
    """``value`` for the check's own figure, else the estimate's path in its figures."""
    old: Figure
    new: Figure
    old_status: str = ""
    new_status: str = ""
    drifted_by: tuple[str, ...] = ()
    """The criteria (as given) under which it drifted; empty: within all of them."""

    @property
    def delta(self) -> float | None:
        if self.old.missing or self.new.missing:
            return None
        assert self.old.value is not None and self.new.value is not None
        return self.new.value - self.old.value

    @property
    def changed(self) -> bool:
        """Anything different: the value, the interval or (for the headline) pytest's status."""
        return (self.old != self.new) or self.old_status != self.new_status

    @property
    def name(self) -> str:
        """``check[subject / about] figure``: how tables and messages name it."""
        where = " / ".join(part for part in (self.subject, self.about) if part)
        return f"{self.check}[{where}] {self.figure}" if where else f"{self.check} {self.figure}"


@dataclass(frozen=True)
class Comparison:
    """Everything two runs differ in, figure by figure."""

    changes: list[FigureChange]
    """Every figure found in both runs, changed or not."""
    new: list[str] = field(default_factory=list)
    """Checks only the new run has (``check[subject / about]``)."""
    vanished: list[str] = field(default_factory=list)
    """Checks only the saved run has."""
    header: list[str] = field(default_factory=list)
    """How the run headers differ, in words (models, judges, settings)."""
    criteria: tuple[Criterion, ...] = ()

    @property
    def drifted(self) -> list[FigureChange]:
        return [change for change in self.changes if change.drifted_by]

    @property
    def changed(self) -> list[FigureChange]:
        return [change for change in self.changes if change.changed]

    def summary(self) -> str:
        """One line: figures compared, changed and drifted, naming only the criteria that
        tripped (a reader must not blame ``ci`` for what ``value:0.05`` caught)."""
        parts = [f"{len(self.changes)} figures compared", f"{len(self.changed)} changed"]
        if self.criteria:
            tripped = [c.text for c in self.criteria
                       if any(c.text in change.drifted_by for change in self.drifted)]
            parts.append(f"{len(self.drifted)} drifted beyond {', '.join(tripped)}" if tripped
                         else f"0 drifted beyond {', '.join(c.text for c in self.criteria)}")
        if self.new:
            parts.append(f"{len(self.new)} new checks")
        if self.vanished:
            parts.append(f"{len(self.vanished)} vanished checks")
        return ", ".join(parts)


def status_of(check: Mapping[str, Any]) -> str:
    """A saved check's status as its row derives it (``ReportRow.status``), so a run saved by
    an older version, which stored the word, reads the same as one saved now."""
    return ReportRow.from_json(dict(check)).status


def compare_runs(old: Mapping[str, Any], new: Mapping[str, Any],
                 criteria: Sequence[Criterion] = ()) -> Comparison:
    """Compare the saved report ``old`` with ``new`` (both JSON v2 payloads, as dicts)."""
    pairs, only_old, only_new = match_checks(_checks(old), _checks(new))
    changes = []
    for old_check, new_check in pairs:
        old_figures, new_figures = figures_of(old_check), figures_of(new_check)
        for name in old_figures:
            if name not in new_figures:
                continue  # a figure the kind no longer reports: no number to compare
            headline = name == HEADLINE
            change = FigureChange(
                check=_label_of(new_check), nodeid=str(new_check.get("nodeid", "")),
                subject=str(new_check.get("subject", "")), about=_about(new_check), figure=name,
                old=old_figures[name], new=new_figures[name],
                old_status=status_of(old_check) if headline else "",
                new_status=status_of(new_check) if headline else "")
            drifted_by = tuple(c.text for c in criteria if c.drifted(change.old, change.new))
            changes.append(replace(change, drifted_by=drifted_by))
    return Comparison(changes=changes, new=[_name(c) for c in only_new],
                      vanished=[_name(c) for c in only_old],
                      header=compare_headers(_run(old), _run(new)), criteria=tuple(criteria))


# -- matching checks ------------------------------------------------------------------------


def match_checks(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]):
    """(pairs, only in old, only in new): by (nodeid, subject, about), then what is left by
    (check id, subject, about) where that names one check on each side."""
    pairs: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    left_old, left_new = list(old), list(new)
    for key in (_node_key, _id_key):
        old_keys, new_keys = _keyed(left_old, key), _keyed(left_new, key)
        matched = [k for k in old_keys if k in new_keys and k[0]]
        pairs += [(old_keys[k], new_keys[k]) for k in matched]
        taken_old = {id(old_keys[k]) for k in matched}
        taken_new = {id(new_keys[k]) for k in matched}
        left_old = [c for c in left_old if id(c) not in taken_old]
        left_new = [c for c in left_new if id(c) not in taken_new]
    return pairs, left_old, left_new


def _node_key(check: Mapping[str, Any]) -> tuple[str, ...]:
    return str(check.get("nodeid", "")), str(check.get("subject", "")), _about(check)


def _id_key(check: Mapping[str, Any]) -> tuple[str, ...]:
    return str(check.get("check_id", "")), str(check.get("subject", "")), _about(check)


def _keyed(checks: Sequence[Mapping[str, Any]], key) -> dict[tuple, Mapping[str, Any]]:
    """Checks by key; a key several checks share (one test's verdicts with one label) gets
    their order as a last part, so the first matches the first."""
    keyed: dict[tuple, Mapping[str, Any]] = {}
    seen: dict[tuple, int] = {}
    for check in checks:
        base = key(check)
        count = seen.get(base, 0)
        seen[base] = count + 1
        keyed[tuple(base) + (count,)] = check  # not (*base, count): mypy 2.4 misreads it
    return keyed


def _about(check: Mapping[str, Any]) -> str:
    return str(check.get("about") or check.get("axis") or "")


def _label_of(check: Mapping[str, Any]) -> str:
    return str(check.get("check_id") or check.get("nodeid") or "?")


def _name(check: Mapping[str, Any]) -> str:
    where = " / ".join(p for p in (str(check.get("subject", "")), _about(check)) if p)
    return f"{_label_of(check)}[{where}]" if where else _label_of(check)


def _checks(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in report.get("checks") or [] if isinstance(c, Mapping)]


def _run(report: Mapping[str, Any]) -> Mapping[str, Any]:
    run = report.get("run")
    return run if isinstance(run, Mapping) else {}


# -- a check's figures ----------------------------------------------------------------------


def figures_of(check: Mapping[str, Any]) -> dict[str, Figure]:
    """The check's own figure (``value``) and every named estimate in its ``figures``."""
    found = {HEADLINE: _figure(check)}
    figures = check.get("figures")
    if isinstance(figures, Mapping):
        _collect(figures, "", found)
    return found


def _collect(node: Mapping[str, Any], prefix: str, found: dict[str, Figure]) -> None:
    for key, value in node.items():
        if not isinstance(value, Mapping):
            continue  # numbers, strings and lists (positional: no stable name) are not figures
        path = f"{prefix}.{key}" if prefix else str(key)
        if _is_estimate(value):
            found.setdefault(path, _figure(value))
        else:
            _collect(value, path, found)


def _is_estimate(node: Mapping[str, Any]) -> bool:
    return {"value", "low", "high"} <= node.keys() and all(
        node[k] is None or _number(node[k]) is not None for k in ("value", "low", "high"))


def _figure(node: Mapping[str, Any]) -> Figure:
    n = node.get("n")
    return Figure(_number(node.get("value")), _number(node.get("low")), _number(node.get("high")),
                  n if isinstance(n, int) and not isinstance(n, bool) else None)


def _number(value: Any) -> float | None:
    """A finite number as float; anything else (None, NaN, text, a bool) as None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


# -- run headers ----------------------------------------------------------------------------

COMPARED_SETTINGS = ("images_per_prompt", "seed", "steps", "guidance", "confidence", "bootstrap",
                     "family", "burden", "device", "dtype", "audit")
"""Settings that change figures (or how their intervals read) when they differ."""


def compare_headers(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """How two run headers differ, one sentence each: generators and judges (by role: model
    and fingerprint), the settings that shape figures, plugin version and git revision."""
    lines = []
    for section, noun in (("models", "model"), ("judges", "judge")):
        old_roles, new_roles = _by_role(old.get(section)), _by_role(new.get(section))
        for role in sorted(old_roles.keys() | new_roles.keys()):
            before, after = old_roles.get(role), new_roles.get(role)
            if before is None:
                lines.append(f"{role}: new {noun} {_who(after)}")
            elif after is None:
                lines.append(f"{role}: the saved run's {noun} {_who(before)} is not in the new run")
            elif before.get("fingerprint") != after.get("fingerprint"):
                what = "a different candidate model" if role == "generator:candidate" \
                    else f"a different {noun}"
                lines.append(f"{role}: {what}: {_who(before)} -> {_who(after)}")
    old_settings, new_settings = old.get("settings") or {}, new.get("settings") or {}
    if isinstance(old_settings, Mapping) and isinstance(new_settings, Mapping):
        for key in COMPARED_SETTINGS:
            if old_settings.get(key) != new_settings.get(key):
                lines.append(f"setting {key}: {old_settings.get(key)!r} -> {new_settings.get(key)!r}")
    for key in ("plugin_version", "git_revision"):
        if old.get(key) != new.get(key):
            lines.append(f"{key.replace('_', ' ')}: {old.get(key)} -> {new.get(key)}")
    return lines


def _by_role(entries: Any) -> dict[str, Mapping[str, Any]]:
    if not isinstance(entries, list):
        return {}
    return {str(e.get("role")): e for e in entries if isinstance(e, Mapping)}


def _who(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "none"
    fingerprint = str(entry.get("fingerprint") or "")
    return f"{entry.get('model')} (fingerprint {fingerprint[:12] or 'unknown'})"
