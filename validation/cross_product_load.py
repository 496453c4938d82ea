"""The slowest loads of the ``cross_product`` mutation (issue #47, item 13).

``tests/unit/test_suite_fuzz.py`` once failed a fresh clone's run: a ``cross_product`` mutant of
``example_suites/paper/occupations.t2i.yaml`` took 27.6 s of ``time.process_time`` under
tracemalloc, and the next call did not. ``cross_product`` ignores its source (it writes
subjects x axes x checks anew), so this loads every size it draws (27), each alone and then
under every other mutation (2 seeds), and times the load by the calling thread's CPU
(``time.thread_time``: ``process_time`` also counts every other thread of a pytest process)
and by the wall clock.

    python validation/cross_product_load.py --json validation/cross_product_load.json
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import random
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Sizes(random.Random):
    """A ``Random`` whose first ``choice`` calls return the given sizes."""

    def __init__(self, sizes: tuple[int, ...], seed: int) -> None:
        super().__init__(seed)
        self.sizes = list(sizes)

    def choice(self, seq):  # type: ignore[override]
        return self.sizes.pop(0) if self.sizes else super().choice(seq)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("fuzz_suites", ROOT / "validation" / "fuzz_suites.py")
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    from pytest_t2ibias.suite import SuiteError, load_suite

    loads = []
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "cross.t2i.yaml"
        for sizes in itertools.product((10, 200, 1000), (5, 30, 60), (5, 50, 100)):
            base = fuzz.cross_product("", Sizes(sizes, 0))
            variants = [("alone", 0, base)] + [(m.__name__, seed, m(base, random.Random(seed)))
                                               for m in fuzz.MUTATIONS for seed in range(2)]
            for then, seed, text in variants:
                fuzz.write_mutant(path, text)
                cpu, wall = time.thread_time(), time.perf_counter()
                try:
                    load_suite(path)
                    outcome = "valid"
                except SuiteError:
                    outcome = "clean"
                except Exception as error:  # counted: the point of the script
                    outcome = f"traceback: {type(error).__name__}"
                loads.append({"sizes": sizes, "then": then, "seed": seed, "outcome": outcome,
                              "cpu_s": round(time.thread_time() - cpu, 3),
                              "wall_s": round(time.perf_counter() - wall, 3)})
    loads.sort(key=lambda load: -load["cpu_s"])
    summary = {"loads": len(loads), "tracebacks": sum(load["outcome"].startswith("traceback")
                                                       for load in loads),
               "slowest_cpu_s": loads[0]["cpu_s"],
               "slowest_wall_s": max(load["wall_s"] for load in loads), "slowest": loads[:5]}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
