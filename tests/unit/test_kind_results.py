"""Kinds own what they report (issue #42): reports/ read only the figures every kind's shared
pieces write (``figures.SHARED_FIGURES``); whatever else a kind reports reaches the report
through its ``CheckKind`` hooks (``reason``, ``judges``, ``about``, ``chart``)."""

from __future__ import annotations

import ast
from pathlib import Path

from pytest_t2ibias.figures import SHARED_FIGURES
from pytest_t2ibias.kinds import CHECK_KINDS
from pytest_t2ibias.reports.collect import failure_reason
from pytest_t2ibias.reports.rows import ReportRow, judge_calibrations

REPORTS = Path(__file__).resolve().parents[2] / "pytest_t2ibias" / "reports"


def figure_keys_read(source: str) -> list[tuple[int, str]]:
    """(line, key) of every ``<x>.figures[...]``/``<x>.figures.get(...)`` (and of a name
    ``figures``) read by a string key."""
    def is_figures(node: ast.AST) -> bool:
        return ((isinstance(node, ast.Attribute) and node.attr == "figures")
                or (isinstance(node, ast.Name) and node.id == "figures"))

    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and is_figures(node.value) \
                and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and is_figures(node.func.value) and node.args \
                and isinstance(node.args[0], ast.Constant):
            key = node.args[0].value
        if isinstance(key, str):
            found.append((node.lineno, key))
    return found


def test_reports_read_no_kind_specific_figure_key():
    specific = {f"{path.name}:{line} {key!r}"
                for path in sorted(REPORTS.glob("*.py"))
                for line, key in figure_keys_read(path.read_text())
                if key not in SHARED_FIGURES}
    assert specific == set(), "kind-specific figures read in reports/: " + ", ".join(sorted(specific))


def test_the_scan_finds_a_kind_specific_key():
    """The scan itself can fail: a report reading intermit's ``alerts`` by key is found."""
    source = "def f(row, figures):\n    return row.figures.get('alerts'), figures['biases']\n"
    assert figure_keys_read(source) == [(2, "alerts"), (2, "biases")]


def test_the_kinds_hooks_carry_what_the_reports_said_by_key():
    from pytest_t2ibias._types import Estimate
    from pytest_t2ibias.verdict import Verdict

    alerted = Verdict(check="intermit", value=Estimate(0.3, 0.2, 0.4, 10),
                      threshold=0.2, message="", figures={"alerts": ["age got worse"]},
                      outcome="fail")
    assert failure_reason(alerted) == "alert: age got worse"
    calibration = {"judge": "vqa x", "axis": "colour", "where": "f"}
    row = ReportRow(nodeid="s::b[car]", check="open_set", subject="car", axis="", value=0.1,
                    low=0.0, high=0.2, n=8, confidence=0.95, threshold=0.3, outcome="pass",
                    figures={"biases": [{"judge_calibration": calibration}]})
    assert [c["judge"] for c in judge_calibrations([row])] == ["vqa x"]
    assert CHECK_KINDS["max_skew_below"].about({"target": "female"}) == "female"


def test_evaluate_and_assert_helpers_take_each_default_from_the_kinds_params():
    """One default per parameter: a keyword of a kind's ``evaluate_*`` (and its ``assert_*``)
    named like a field of its ``Params`` reads that field's default (``Params.default``),
    never a second literal, for every kind in the registry (``confidence`` and ``burden``
    aside: None there means "the suite's")."""
    import dataclasses
    import importlib
    import inspect

    from pytest_t2ibias.kinds import BUILTIN_KINDS

    assertions = ast.parse((REPORTS.parent / "assertions.py").read_text())
    written_twice = []
    for name in BUILTIN_KINDS:
        kind = CHECK_KINDS[name]
        fields = {f.name for f in dataclasses.fields(kind.params)
                  if f.default not in (dataclasses.MISSING, None)} - {"confidence", "burden"}
        module = ast.parse(inspect.getsource(importlib.import_module(kind.run.__module__)))
        helpers = [node for tree in (module, assertions) for node in ast.walk(tree)
                   if isinstance(node, ast.FunctionDef)
                   and node.name in (f"evaluate_{name}", f"assert_{name}")]
        for helper in helpers:
            arguments = helper.args
            positional = arguments.posonlyargs + arguments.args
            pairs = list(zip(positional[len(positional) - len(arguments.defaults):],
                             arguments.defaults))
            pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d]
            written_twice += [f"{helper.name}({argument.arg}={ast.unparse(default)})"
                              for argument, default in pairs
                              if argument.arg in fields and isinstance(default, ast.Constant)]
    assert written_twice == []
