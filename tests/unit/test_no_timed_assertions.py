"""Issue #47: no test asserts on time. A bound on seconds fails on a busy or slow box (a
fuzzed suite's 3 s bound failed a fresh clone's run at 27.6 s) and says nothing about the
code; time is measured by benchmarks/ and validation/ scripts, which print it."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]  # every layer and the support package
CLOCKS = {"time", "perf_counter", "process_time", "monotonic", "perf_counter_ns",
          "process_time_ns", "monotonic_ns", "time_ns", "thread_time"}


def _is_clock(node: ast.AST, clocks: set[str]) -> bool:
    """``time.perf_counter()`` (any clock of ``time``), or a name assigned from one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return isinstance(node.func.value, ast.Name) and node.func.value.id == "time" \
            and node.func.attr in CLOCKS
    return isinstance(node, ast.Name) and node.id in clocks


def _measures_time(node: ast.AST, clocks: set[str], durations: set[str]) -> bool:
    """Whether ``node`` holds a duration: a clock less something (or the reverse), or a name
    assigned from one."""
    return any((isinstance(child, ast.BinOp) and isinstance(child.op, ast.Sub)
                and (_is_clock(child.left, clocks) or _is_clock(child.right, clocks)))
               or (isinstance(child, ast.Name) and child.id in durations)
               for child in ast.walk(node))


def timed_assertions(source: str) -> list[int]:
    """The lines of ``assert``s that bound a duration (``<``, ``<=``, ``>``, ``>=`` on a clock
    difference, directly or through a name assigned from one), per function. A clock read for
    a timestamp (``now = time.time()``, compared for equality) is no timed assertion."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = list(ast.walk(function))
        assigned = [(node.targets if isinstance(node, ast.Assign) else [node.target], node.value)
                    for node in body if isinstance(node, (ast.Assign, ast.AnnAssign))
                    and node.value is not None]
        clocks = {t.id for targets, value in assigned if _is_clock(value, set())
                  for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        durations = {t.id for targets, value in assigned if _measures_time(value, clocks, set())
                     for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        for node in body:
            if not isinstance(node, ast.Assert):
                continue
            for compare in ast.walk(node.test):
                if isinstance(compare, ast.Compare) and any(
                        isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in compare.ops) \
                        and any(_measures_time(side, clocks, durations)
                                for side in [compare.left, *compare.comparators]):
                    found.append(node.lineno)
    return sorted(set(found))


def test_the_scan_finds_a_timed_assertion():
    assert timed_assertions("import time\ndef test():\n    started = time.process_time()\n"
                            "    work()\n    seconds = time.process_time() - started\n"
                            "    assert seconds < 3.0\n") == [6]
    assert timed_assertions("import time\ndef test():\n    started = time.perf_counter()\n"
                            "    assert grown < 300, time.perf_counter() - started\n") == []


def test_no_test_asserts_on_time():
    offenders = {path.name: lines for path in sorted(TESTS.rglob("*.py"))
                 if (lines := timed_assertions(path.read_text()))}
    assert not offenders, f"assertions on time (measure it in benchmarks/ instead): {offenders}"
