"""Where a run's images go, check by check (issue #46): a pytest plugin that records every
image each check reads while it is judged (each look, the chance-to-decide reading and the
final verdict), and which of them calibrate its judge, then writes them at the session's end.

    PYTHONPATH=benchmarks python -m pytest example_suites -p images_by_check \\
        --t2i-json=run.json ... # writes run.json.images.json beside the report
    python benchmarks/images_by_check.py fixed.json.images.json adaptive.json.images.json

The summary says, per check, the images it reads (own and calibration), those no other check
reads (what it alone costs), and the run's distinct images: the union, which is what the
request layer generates.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

_reading: list[str] = []  # the check being judged (innermost last)
_calibrating: list[bool] = []
_reads: dict[str, dict[str, set[str]]] = defaultdict(lambda: {"own": set(), "calibration": set()})
_prompts: dict[str, str] = {}


def pytest_configure(config: Any) -> None:
    from pytest_t2ibias import session_plan
    from pytest_t2ibias.kinds import _judge
    from pytest_t2ibias.store import cache as cache_module
    from pytest_t2ibias.store import request_layer

    judge = session_plan.SessionPlan.judge

    def judging(self: Any, entry: Any, *args: Any, **kwargs: Any) -> Any:
        _reading.append(entry.nodeid)
        try:
            return judge(self, entry, *args, **kwargs)
        finally:
            _reading.pop()

    session_plan.SessionPlan.judge = judging  # type: ignore[method-assign]

    calibrate = _judge.counterfactual_calibration

    def calibrating(*args: Any, **kwargs: Any) -> Any:
        _calibrating.append(True)
        try:
            return calibrate(*args, **kwargs)
        finally:
            _calibrating.pop()

    _judge.counterfactual_calibration = calibrating  # type: ignore[assignment]

    images = request_layer.RequestLayer.images

    def recording(self: Any, generator: Any, requests: Any) -> Any:
        if _reading:
            part = "calibration" if _calibrating else "own"
            for request in requests:
                key = cache_module.image_key(generator.fingerprint, request)
                _prompts[key] = request.prompt
                _reads[_reading[-1]][part].add(key)
        return images(self, generator, requests)

    request_layer.RequestLayer.images = recording  # type: ignore[method-assign]
    config._images_by_check_json = config.getoption("t2i_json", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    """A Python test's images (its assertion helpers read them outside the session plan)."""
    _reading.append(item.nodeid)
    try:
        yield
    finally:
        _reading.pop()


def pytest_unconfigure(config: Any) -> None:
    report = getattr(config, "_images_by_check_json", None)
    if not report:
        return
    out = {nodeid: {part: sorted(keys) for part, keys in parts.items()}
           for nodeid, parts in _reads.items()}
    Path(f"{report}.images.json").write_text(json.dumps({"checks": out, "prompts": _prompts}))


def summarise(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    checks, prompts = data["checks"], data["prompts"]
    readers: dict[str, set[str]] = defaultdict(set)
    calibration_keys: set[str] = set()
    for nodeid, parts in checks.items():
        for key in parts["own"] + parts["calibration"]:
            readers[key].add(nodeid)
        calibration_keys.update(parts["calibration"])
    own_keys = {k for parts in checks.values() for k in parts["own"]}
    rows = []
    for nodeid, parts in checks.items():
        keys = set(parts["own"]) | set(parts["calibration"])
        rows.append({"nodeid": nodeid, "own": len(parts["own"]),
                     "calibration": len(parts["calibration"]),
                     "alone": sum(len(readers[k]) == 1 for k in keys),
                     "prompts": len({prompts[k] for k in parts["own"]})})
    return {"images": len(readers),
            "calibration_images": len(calibration_keys),
            "calibration_only": len(calibration_keys - own_keys),
            "read_by_one_check": sum(len(r) == 1 for r in readers.values()),
            "checks": sorted(rows, key=lambda r: -r["alone"])}


if __name__ == "__main__":
    for name in sys.argv[1:]:
        summary = summarise(Path(name))
        print(name, {k: v for k, v in summary.items() if k != "checks"})
        for row in summary["checks"]:
            print(f"  {row['own']:6d} own {row['calibration']:5d} cal {row['alone']:6d} alone "
                  f"{row['prompts']:3d} prompts  {row['nodeid']}")
