"""Fuzz the saved-run readers: mutated saved runs fed to ``report`` and ``compare`` (issue #47).

Three saved runs of varied checks (intervals, an IS matrix, a gallery, a judge calibration,
an answer distribution, an interrupted header) are written with ``runs.saved.save_run``;
each mutant (a value replaced by a hostile one, a key deleted, a container's type swapped,
nesting deep enough for ``RecursionError``, NaN and 1e999 literals, a 20 MB string, invalid
UTF-8, byte flips, truncations, and in place of the file a FIFO, a link to /dev/zero, a
directory or an empty file) goes through

    python -m pytest_t2ibias report MUTANT --html OUT.html
    python -m pytest_t2ibias compare BASE MUTANT
    python -m pytest_t2ibias compare MUTANT BASE --allow-incomplete

in this process (``__main__.main``), and each call is counted as

* ``clean``: exit status 0, 1 or 2, no exception (a refusal is one line on stderr);
* ``traceback``: any exception out of ``main``;
* ``hang``: no answer within ``--timeout`` seconds (SIGALRM).

The process runs under an address-space limit (``--memory``), so a runaway allocation
shows as a ``MemoryError`` traceback; the peak resident size is reported.

    python validation/fuzz_saved_runs.py --count 300 --seed 0

``run_fuzz`` is what ``tests/plugin/test_saved_run_fuzz.py`` runs, seeded and smaller.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import random
import resource
import signal
import stat
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HOSTILE_VALUES: list[Any] = [
    None, True, False, 0, -1, 2**70, -(2**70), 1e308, -1e-308, "", "x" * 5000,
    "<script>alert(1)</script>", "\x00\x1b[31m", "\ud800", [], {}, [None], {"": None},
    [[[[[[[[[[[]]]]]]]]]]], {"a": {"b": {"c": {"d": []}}}}, ["a", 1, None, {}],
    {"value": "high", "low": [], "high": {}}, {"groups": "not a list"},
    {"groups": [{"prompt": 3, "images": "x"}]}, {"choices": 5, "counts": []},
]
RAW_LITERALS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "123456789" * 40]


def base_runs(folder: Path) -> list[Path]:
    """Three saved runs, of every figure the HTML report draws."""
    from pytest_t2ibias.reports.rows import ReportRow
    from pytest_t2ibias.runs.saved import save_run

    def row(subject: str, value: float, status: str = "passed", **figures: Any) -> ReportRow:
        return ReportRow(
            nodeid=f"toy.t2i.yaml::gate[{subject}-gender]", check="w1_below", subject=subject,
            axis="gender", value=value, low=value - 0.05, high=value + 0.05, n=100,
            confidence=0.95, threshold=0.5,
            figures={"label": subject, "burden": "model", **figures}, check_id="gate",
            outcome="pass" if status == "passed" else "fail",
            margin=0.5 - value, gate_confidence=0.95, about="gender", reason="")

    matrix = {"labels": ["male", "female"], "values": [[0.5, 0.1], [0.1, 0.3]]}
    gallery = {"groups": [{"prompt": "a photo of a nurse", "images": [
        {"key": "ab" + "0" * 62, "label": "female"}]}]}
    calibration = {"judge": "clip", "axis": "gender", "choices": ["male", "female"],
                   "confusion": {"male": {"male": 9, "female": 1}},
                   "accuracy": {"male": {"value": 0.9, "low": 0.8, "high": 0.95}},
                   "readability": {"value": 0.8, "low": 0.7,
                                                              "high": 0.9},
                   "readable": True, "where": "fixtures/judges"}
    distribution = {"choices": ["male", "female"], "counts": {"male": 60, "female": 40},
                    "shares": {"male": 0.6, "female": 0.4}}
    header = {"models": [{"role": "generator:candidate", "model": "fixtures/toy-sd",
                          "fingerprint": "fp"}],
              "judges": [{"role": "vqa", "model": "clip", "fingerprint": "fj"}],
              "settings": {"seed": 0, "confidence": 0.95}, "date": "2026-01-01T00:00:00",
              "git_revision": "abc", "judge_calibrations": [calibration]}
    rows = [row("nurse", 0.3, matrix=matrix), row("doctor", 0.2, gallery=gallery),
            row("pilot", 0.6, "failed", judge_calibration=calibration,
                distribution=distribution),
            row("chef", float("nan"), "error")]
    storage = folder / "base"
    return [save_run(storage, "complete", rows, {"images_generated": 3}, header),
            save_run(storage, "short", rows[:2], {}, {**header, "interrupted": True,
                                                      "items_not_run": 2,
                                                      "items_collected": 4}),
            save_run(storage, "empty", [], {}, {})]


# -- mutations ----------------------------------------------------------------------------


def _nodes(doc: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every dict or list in ``doc``."""
    found = []
    if isinstance(doc, (dict, list)):
        found.append(path)
        items = doc.items() if isinstance(doc, dict) else enumerate(doc)
        for key, value in items:
            found += _nodes(value, (*path, key))
    return found


def _at(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def replace_value(doc: Any, rng: random.Random) -> str:
    node = _at(doc, rng.choice(_nodes(doc)))
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    value = rng.choice(HOSTILE_VALUES)
    if keys:
        node[rng.choice(keys)] = value
    elif isinstance(node, list):
        node.append(value)
    return json.dumps(doc)


def delete_key(doc: Any, rng: random.Random) -> str:
    node = _at(doc, rng.choice(_nodes(doc)))
    if isinstance(node, dict) and node:
        del node[rng.choice(list(node))]
    elif isinstance(node, list) and node:
        node.pop(rng.randrange(len(node)))
    return json.dumps(doc)


def swap_container(doc: Any, rng: random.Random) -> str:
    path = rng.choice([p for p in _nodes(doc) if p] or [("checks",)])
    parent = _at(doc, path[:-1])
    value = parent[path[-1]]
    parent[path[-1]] = (list(value.values()) if isinstance(value, dict)
                        else {str(i): v for i, v in enumerate(value)})
    return json.dumps(doc)


def raw_literal(doc: Any, rng: random.Random) -> str:
    marker = "\u2603MARK\u2603"
    node = _at(doc, rng.choice(_nodes(doc)))
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    if not keys:
        return json.dumps(doc)
    node[rng.choice(keys)] = marker
    return json.dumps(doc).replace(json.dumps(marker), rng.choice(RAW_LITERALS))


def deep_nesting(doc: Any, rng: random.Random) -> str:
    depth = rng.choice([1000, 50_000, 200_000])
    marker = "\u2603DEEP\u2603"
    node = _at(doc, rng.choice(_nodes(doc)))
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    if not keys:
        return "[" * depth + "]" * depth
    node[rng.choice(keys)] = marker
    nested = rng.choice(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth])
    return json.dumps(doc).replace(json.dumps(marker), nested)


def huge_string(doc: Any, rng: random.Random) -> str:
    node = _at(doc, rng.choice(_nodes(doc)))
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    if keys:
        node[rng.choice(keys)] = "y" * (20 * 2**20)
    return json.dumps(doc)


def many_checks(doc: Any, rng: random.Random) -> str:
    # at most a few thousand: drawing is linear (about 1.3 ms a check on the 2-CPU box), so
    # 50,000 stacked checks take a minute of honest work, which a timeout would call a hang
    if isinstance(doc.get("checks"), list) and 0 < len(doc["checks"]) < 100:
        doc["checks"] = doc["checks"] * rng.choice([50, 500])
    return json.dumps(doc)


def byte_flips(text: str, rng: random.Random) -> bytes:
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 20)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def truncate(text: str, rng: random.Random) -> bytes:
    return text.encode()[: rng.randrange(len(text))]


JSON_MUTATIONS = [replace_value, replace_value, replace_value, delete_key, delete_key,
                  swap_container, raw_literal, deep_nesting, huge_string, many_checks]
BYTE_MUTATIONS = [byte_flips, truncate]
SPECIAL_FILES = ["fifo", "dev-zero", "directory", "empty", "invalid-utf8"]


LIGHT_MUTATIONS = [m for m in JSON_MUTATIONS if m not in (huge_string, many_checks)]


def make_mutant(base: Path, target: Path, rng: random.Random, light: bool = False) -> str:
    """Write one mutant of ``base`` at ``target``; the mutation's name. ``light``: none of
    the slow ones (20 MB strings, thousands of checks), for the test suite."""
    text = base.read_text()
    roll = rng.random()
    if roll < 0.06:
        special = rng.choice(SPECIAL_FILES)
        if special == "fifo":
            os.mkfifo(target)
        elif special == "dev-zero":
            target.symlink_to("/dev/zero")
        elif special == "directory":
            target.mkdir()
        elif special == "empty":
            target.write_bytes(b"")
        else:
            target.write_bytes(text.encode()[:200] + b"\xff\xfe\x80" + text.encode()[200:])
        return special
    if roll < 0.25:
        mutation = rng.choice(BYTE_MUTATIONS)
        target.write_bytes(mutation(text, rng))
        return mutation.__name__
    doc = json.loads(text)
    for _ in range(rng.choice([1, 1, 2, 4])):  # stacked mutations too
        mutation = rng.choice(LIGHT_MUTATIONS if light else JSON_MUTATIONS)
        text = mutation(doc, rng)
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            break
    target.write_text(text)
    return mutation.__name__


# -- running ------------------------------------------------------------------------------


class Hung(Exception):
    pass


class FifoWatch:
    """Releases a reader blocked on the FIFO at ``path`` after ``seconds`` and says so.

    SIGALRM cannot be relied on for that: with other threads alive the signal may land on
    one of them, and the main thread stays in ``open()``. Opening the write end (without
    blocking: it fails when no reader waits) and closing it gives a blocked reader EOF."""

    def __init__(self, path: Path, seconds: float) -> None:
        import threading

        self.path, self.blocked = path, False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(seconds,), daemon=True)
        self._thread.start()

    def _watch(self, seconds: float) -> None:
        wait = seconds
        while not self._done.wait(wait):  # then each second: a reader may open it again
            wait = 1.0
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # no reader waiting (or no FIFO any more): nothing hangs on it
                continue
            self.blocked = True
            os.close(fd)

    def stop(self) -> bool:
        """Whether a reader was found blocked on the FIFO."""
        self._done.set()
        self._thread.join()
        return self.blocked


def _alarm(*_: Any) -> None:
    raise Hung()


def call(argv: list[str], timeout: float) -> tuple[str, str]:
    """(outcome, detail) of ``main(argv)``: clean, traceback or hang."""
    from pytest_t2ibias.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    watches = [FifoWatch(Path(arg), timeout) for arg in argv
               if os.path.exists(arg) and stat.S_ISFIFO(os.stat(arg).st_mode)]
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    except Hung:
        return "hang", " ".join(argv)
    except BaseException:  # what the fuzz counts
        return "traceback", traceback.format_exc(limit=-6)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        blocked = [watch.stop() for watch in watches]
    if any(blocked):
        return "hang", f"blocked reading a FIFO: {' '.join(argv)}"
    if status not in (0, 1, 2):
        return "traceback", f"exit status {status}"
    if status == 2 and "\n" in err.getvalue().strip():
        return "traceback", f"a refusal of more than one line: {err.getvalue()[:300]}"
    return "clean", ""


def run_fuzz(count: int, seed: int, folder: Path, timeout: float = 30.0, light: bool = False
             ) -> dict[str, Any]:
    """``count`` mutants, three calls each; the counts and the first problems."""
    rng = random.Random(seed)
    bases = base_runs(folder)
    counts: collections.Counter[str] = collections.Counter()
    by_mutation: collections.Counter[str] = collections.Counter()
    problems: list[dict[str, str]] = []
    started = time.perf_counter()
    for index in range(count):
        base = rng.choice(bases)
        mutant = folder / f"mutant-{index:04d}.json"
        mutation = make_mutant(base, mutant, rng, light)
        by_mutation[mutation] += 1
        out = folder / f"mutant-{index:04d}.html"
        for argv in (["report", str(mutant), "--html", str(out)],
                     ["compare", str(bases[0]), str(mutant)],
                     ["compare", str(mutant), str(bases[0]), "--allow-incomplete"]):
            outcome, detail = call(argv, timeout)
            counts[outcome] += 1
            if outcome != "clean" and len(problems) < 20:
                problems.append({"mutant": str(mutant), "mutation": mutation,
                                 "command": argv[0], "outcome": outcome, "detail": detail})
        if out.exists():
            out.unlink()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"mutants": count, "calls": sum(counts.values()), "counts": dict(counts),
            "mutations": dict(by_mutation), "seconds": round(time.perf_counter() - started, 1),
            "peak_rss_mib": round(peak_kib / 1024, 1), "problems": problems}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--memory", type=int, default=2048, metavar="MIB",
                        help="address-space limit of this process (default 2048 MiB)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = parser.parse_args()
    limit = args.memory * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with tempfile.TemporaryDirectory() as folder:
        result = run_fuzz(args.count, args.seed, Path(folder), args.timeout)
    result["memory_limit_mib"] = args.memory
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if set(result["counts"]) <= {"clean"} else 1


if __name__ == "__main__":
    sys.exit(main())
