"""Images per decision (issues #26, #46): the example suites at their fixed images_per_prompt
(``--t2i-fixed-n``) against the default adaptive rounds (16, 32, 64 ... images per prompt,
stopping once the interval, spent over the looks, is decided, or once the check will not
decide by its cap).

Both runs read one copy of a cache (``--cache``, copied so the source is never written), so
the figure is the images each mode *needs*, not what the cache happened to miss: a run's
images are the distinct images its checks read (``work.images_generated +
work.images_from_cache`` of its JSON report; the request layer counts each image once a
session). Every check's verdict (pass, fail, inconclusive) is compared.

    python benchmarks/adaptive.py --cache /work/main/.t2ibias_cache
    python benchmarks/adaptive.py --cache ... --adaptive-max 2x \
        --out benchmarks/adaptive_2x.json        # caps at twice each check's fixed n
    python benchmarks/adaptive.py --cache ... --spending bonferroni \
        --out benchmarks/adaptive_bonferroni.json  # alpha spent evenly over the looks

Writes benchmarks/adaptive.json: images_fixed, images_adaptive, images_ratio (adaptive /
fixed), inconclusive_at_fixed_n (the suites' checks fixed n left inconclusive, re-run in
rounds up to ``--beyond-max``, 4x their n by default: which a larger cap decides; this part
draws new images into the copy), verdicts_changed (every check whose interval's outcome differs: pass, fail,
inconclusive), statuses_changed (pytest's word differs, after the burden and xfail
marks), per check its n in both, and
the same for a run of only the checks whose kinds can stop early (``adaptive_kinds_only``:
in the whole run a prompt's images are the most any check reads of it, and the kinds that
keep their fixed n, intermit's search above all, read the same prompts), and the images of
a run of only the other checks (``fixed_kinds_only``: what the run reads even if every
adaptive check cost nothing, so the floor of ``images_ratio`` on these suites).

Its runs load ``-p images_by_check`` (``benchmarks/images_by_check.py``), and so may the runs
given to ``--reports`` (PYTHONPATH=benchmarks): the JSON then says where each run's images go
(``images_by_check``): the calibration's share, and per check what it reads and what it alone
costs (images no other check reads).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXED_N = "--t2i-fixed-n"


def adaptive_kinds() -> tuple[str, ...]:
    """The kinds that can sample adaptively (``CheckKind.adaptive``), as ``-k`` words."""
    sys.path.insert(0, str(ROOT))  # this checkout's package
    from pytest_t2ibias.kinds import CHECK_KINDS

    return tuple(name for name, kind in CHECK_KINDS.items() if kind.adaptive)


def run_suites(cache: Path, report: Path, *extra: str,
               targets: tuple[str, ...] = ("example_suites",)) -> tuple[dict, float]:
    """The example suites (or the ``targets`` node ids) through pytest on ``cache``; the
    JSON report and the seconds."""
    path = os.pathsep.join(filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path,
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    start = time.time()
    # -p images_by_check: each check's images beside the report (``where_images_go``)
    subprocess.run([sys.executable, "-m", "pytest", *targets, "-q", "-p",
                    "no:cacheprovider", "-p", "images_by_check", f"--t2i-cache-dir={cache}",
                    f"--t2i-json={report}", *extra], cwd=ROOT, env=env, check=False,
                   stdout=subprocess.DEVNULL)
    return json.loads(report.read_text()), time.time() - start


def distance_to_limit(row: dict) -> float | None:
    """How far fixed n's estimate sits from its limit, in its interval's half-widths on the
    limit's side (above 1: fixed n decided; 0: on the limit): why a check stops where it
    does."""
    value, low, high, limit = (row.get(k) for k in ("value", "low", "high", "threshold"))
    if None in (value, low, high, limit):
        return None
    half = (high - value) if limit >= value else (value - low)
    return round(abs(limit - value) / half, 3) if half > 0 else None


def images_read(report: dict) -> int:
    work = report.get("work") or {}
    return int(work.get("images_generated", 0)) + int(work.get("images_from_cache", 0))


def compare(fixed: dict, adaptive: dict) -> dict:
    """Per check: the outcome and n of both runs, adaptive's stopping point, and the
    checks whose outcome changed."""
    before = {row["nodeid"]: row for row in fixed["checks"]}
    after = {row["nodeid"]: row for row in adaptive["checks"]}
    checks, changed, statuses = [], [], []
    for nodeid, row in before.items():
        other = after.get(nodeid)
        if other is None:
            changed.append({"nodeid": nodeid, "fixed": row["outcome"], "adaptive": "missing"})
            continue
        stopped = (other.get("figures") or {}).get("adaptive")
        checks.append({"nodeid": nodeid, "kind": row["kind"], "fixed": row["outcome"],
                       "adaptive": other["outcome"], "n_fixed": row["n"], "n_adaptive": other["n"],
                       "stopped_at": stopped["images_per_prompt"] if stopped else None,
                       "cap": stopped["cap"] if stopped else None,
                       "will_not_decide": bool(stopped and stopped.get("will_not_decide")),
                       "chances_to_decide": stopped.get("chances_to_decide") if stopped else None,
                       "distance_to_limit": distance_to_limit(row)})
        if row["status"] != other["status"]:  # pytest's word, after burden and xfail marks
            statuses.append({"nodeid": nodeid, "fixed": row["status"],
                             "adaptive": other["status"]})
        if row["outcome"] != other["outcome"]:
            changed.append({"nodeid": nodeid, "fixed": row["outcome"],
                            "adaptive": other["outcome"],
                            "fixed_interval": [row["low"], row["high"]],
                            "adaptive_interval": [other["low"], other["high"]],
                            "threshold": row["threshold"]})
    return {"checks": checks, "verdicts_changed": changed, "statuses_changed": statuses}


def beyond_n(fixed: dict, adaptive: dict, cap: str) -> dict:
    """The suites' checks fixed n left inconclusive, run again in rounds up to ``cap``:
    which it decided, where it stopped, and the images both runs read."""
    compared = compare(fixed, adaptive)
    after = {row["nodeid"]: row for row in adaptive["checks"]}
    checks = [{**check, "interval": [after[check["nodeid"]]["low"],
                                     after[check["nodeid"]]["high"]],
               "threshold": after[check["nodeid"]]["threshold"]}
              for check in compared["checks"]]
    return {"max": cap, "checks": checks,
            "decided": sum(c["adaptive"] != "inconclusive" for c in checks),
            "images_fixed": images_read(fixed), "images_adaptive": images_read(adaptive)}


def by_kind(checks: list[dict]) -> dict[str, dict]:
    """Per kind: its checks, how many stopped before their cap, and the images they read
    on their own (the sum of their n) in each mode."""
    kinds: dict[str, dict] = {}
    for check in checks:
        row = kinds.setdefault(check["kind"], {"checks": 0, "stopped_early": 0,
                                               "n_fixed": 0, "n_adaptive": 0})
        row["checks"] += 1
        row["stopped_early"] += bool(check["stopped_at"] and check["cap"]
                                     and check["stopped_at"] < check["cap"])
        row["n_fixed"] += check["n_fixed"] or 0
        row["n_adaptive"] += check["n_adaptive"] or 0
    return dict(sorted(kinds.items()))


def summary(args: argparse.Namespace, fixed: dict, adaptive: dict) -> dict:
    """What both modes read and decided, check by check: the part of the JSON every
    measurement has."""
    images_fixed, images_adaptive = images_read(fixed), images_read(adaptive)
    compared = compare(fixed, adaptive)
    adaptive_checks = [c for c in compared["checks"] if c["stopped_at"] is not None]
    decided = {"pass", "fail"}
    return {
        "command": " ".join(["python", "benchmarks/adaptive.py", *sys.argv[1:]]),
        "fixtures": args.fixtures,
        "adaptive_max": args.adaptive_max,
        "spending": args.spending or "obrien_fleming",
        "images_fixed": images_fixed,
        "images_adaptive": images_adaptive,
        "images_ratio": round(images_adaptive / images_fixed, 4) if images_fixed else None,
        "verdicts_changed": compared["verdicts_changed"],
        "verdicts_changed_where_fixed_n_decides": [
            c for c in compared["verdicts_changed"] if c["fixed"] in decided],
        "statuses_changed": compared["statuses_changed"],
        "checks_compared": len(compared["checks"]),
        "adaptive_checks": len(adaptive_checks),
        "adaptive_checks_images": {  # the images those checks read on their own (their n)
            "fixed": sum(c["n_fixed"] for c in adaptive_checks),
            "adaptive": sum(c["n_adaptive"] for c in adaptive_checks)},
        "will_not_decide": [c["nodeid"] for c in compared["checks"] if c["will_not_decide"]],
        "not_saving": not_saving(compared["checks"]),
        "by_kind": by_kind(compared["checks"]),
        "work_fixed": fixed.get("work"),
        "work_adaptive": adaptive.get("work"),
        "checks": compared["checks"],
    }


def where_images_go(fixed_report: Path, adaptive_report: Path) -> dict | None:
    """Each run's images by check (``benchmarks/images_by_check.py``'s ``<report>.images.json``,
    written when the run loaded it with ``-p images_by_check``): the distinct images, the
    calibration's, those only one check reads, and per check, in both runs, what it reads and
    what it alone costs. None without both."""
    sidecars = [Path(f"{report}.images.json") for report in (fixed_report, adaptive_report)]
    if not all(path.is_file() for path in sidecars):
        return None
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from images_by_check import summarise

    fixed, adaptive = (summarise(path) for path in sidecars)
    by_check = {row["nodeid"]: {"fixed": row} for row in fixed["checks"]}
    for row in adaptive["checks"]:
        by_check.setdefault(row["nodeid"], {})["adaptive"] = row
    checks = [{"nodeid": nodeid,
               **{f"{mode}_{part}": both.get(mode, {}).get(part)
                  for mode in ("fixed", "adaptive") for part in ("own", "calibration", "alone")}}
              for nodeid, both in by_check.items()]
    checks.sort(key=lambda c: -((c["adaptive_alone"] or 0) + (c["fixed_alone"] or 0)))
    return {"fixed": {k: v for k, v in fixed.items() if k != "checks"},
            "adaptive": {k: v for k, v in adaptive.items() if k != "checks"},
            "checks": checks}


def one_run(args: argparse.Namespace, adaptive: dict) -> dict:
    """One run at the defaults, alone: what it read, where each adaptive check stopped
    (before its cap decided, before its cap as will-not-decide, or at its cap), per kind, and
    pytest's statuses."""
    images = images_read(adaptive)
    checks, kinds = [], {}
    for row in adaptive["checks"]:
        rounds = (row.get("figures") or {}).get("adaptive")
        where = ("fixed n" if not rounds else "will not decide" if rounds.get("will_not_decide")
                 else "at its cap" if rounds["images_per_prompt"] >= rounds["cap"]
                 else "decided before its cap")
        checks.append({"nodeid": row["nodeid"], "kind": row["kind"], "outcome": row["outcome"],
                       "status": row["status"], "n": row["n"], "stopped": where,
                       "stopped_at": rounds["images_per_prompt"] if rounds else None,
                       "cap": rounds["cap"] if rounds else None,
                       "chances_to_decide": rounds.get("chances_to_decide") if rounds else None})
        tally = kinds.setdefault(row["kind"], {})
        tally[where] = tally.get(where, 0) + 1
    statuses: dict[str, int] = {}
    for check in checks:
        statuses[check["status"]] = statuses.get(check["status"], 0) + 1
    return {"command": " ".join(["python", "benchmarks/adaptive.py", *sys.argv[1:]]),
            "fixtures": args.fixtures, "images_adaptive": images,
            "images_fixed": args.fixed_images,
            "images_ratio": round(images / args.fixed_images, 4) if args.fixed_images else None,
            "statuses": statuses, "by_kind": dict(sorted(kinds.items())),
            "work_adaptive": adaptive.get("work"), "checks": checks}


def not_saving(checks: list[dict]) -> list[dict]:
    """Each check whose adaptive n is not below its fixed n, with why: its fixed-n estimate's
    distance to its limit in half-widths (near 1: the cap's interval needed the images; below
    1: fixed n did not decide either), or that its kind or its lack of a gate keeps fixed n."""
    out = []
    for c in checks:
        if c["n_adaptive"] is None or c["n_fixed"] is None or c["n_adaptive"] < c["n_fixed"]:
            continue
        if c["stopped_at"] is None:
            why = "fixed n: its kind cannot stop early, or it gates on no interval"
        elif c["distance_to_limit"] is None:
            why = "no interval to read a distance from"
        elif c["distance_to_limit"] < 1:
            why = (f"fixed n {c['fixed']}: its estimate {c['distance_to_limit']} half-widths "
                   "from the limit, undecided at the looks before the cap")
        else:
            why = (f"decided at fixed n {c['distance_to_limit']} half-widths from the limit: "
                   "the early looks' spent intervals, wider, did not decide")
        out.append({"nodeid": c["nodeid"], "n_fixed": c["n_fixed"],
                    "n_adaptive": c["n_adaptive"], "why": why})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path,
                        help="a warm cache of the example suites (copied, never written)")
    parser.add_argument("--report", type=Path, metavar="ADAPTIVE",
                        help="summarise one JSON report of the example suites at the defaults "
                             "(no fixed-n run to compare with): its images, each adaptive "
                             "check's stop against its cap, and the pytest statuses")
    parser.add_argument("--fixed-images", type=int, default=None,
                        help="with --report: the images a fixed-n run of the same suites "
                             "read, measured elsewhere (said in --fixtures)")
    parser.add_argument("--reports", type=Path, nargs=2, metavar=("FIXED", "ADAPTIVE"),
                        help="compare two JSON reports of the example suites already run "
                             "(--t2i-fixed-n, and the defaults; cold or warm: a run's images "
                             "are generated + from cache) instead of running them; no "
                             "subset or beyond-n runs")
    parser.add_argument("--adaptive-max", default=None,
                        help="--t2i-adaptive-max for the adaptive run: N or Nx (default: "
                             "each check's own images_per_prompt)")
    parser.add_argument("--spending", default=None,
                        help="--t2i-adaptive-spending for the adaptive run (default: the "
                             "plugin's, obrien_fleming)")
    parser.add_argument("--fixtures", default="",
                        help="which models the cache's images came from, for the record")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "adaptive.json")
    parser.add_argument("--beyond-max", default="4x",
                        help="cap for re-running the suites' checks fixed n left inconclusive "
                             "(draws new images; empty: skip)")
    args = parser.parse_args()
    if args.report:
        result = one_run(args, json.loads(args.report.read_text()))
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k != "checks"}, indent=1))
        return
    if args.reports:
        fixed, adaptive = (json.loads(path.read_text()) for path in args.reports)
        result = summary(args, fixed, adaptive)
        breakdown = where_images_go(*args.reports)
        if breakdown is not None:
            result["images_by_check"] = breakdown
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({k: v for k, v in result.items()
                          if k not in ("checks", "images_by_check")}, indent=1))
        return
    if args.cache is None:
        parser.error("--cache or --reports is required")
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "cache"
        shutil.copytree(args.cache, cache)
        fixed, fixed_seconds = run_suites(cache, Path(scratch) / "fixed.json", FIXED_N)
        extra = (([f"--t2i-adaptive-max={args.adaptive_max}"] if args.adaptive_max else [])
                 + ([f"--t2i-adaptive-spending={args.spending}"] if args.spending else []))
        adaptive, adaptive_seconds = run_suites(cache, Path(scratch) / "adaptive.json", *extra)
        breakdown = where_images_go(Path(scratch) / "fixed.json", Path(scratch) / "adaptive.json")
        # the checks that can sample adaptively, alone: their images are not hidden by a
        # fixed-n check that reads the same prompt (an intermit search, an intervention)
        only = ["-k", " or ".join(adaptive_kinds())]
        subset_fixed, _ = run_suites(cache, Path(scratch) / "subset_fixed.json", *only, FIXED_N)
        subset_adaptive, _ = run_suites(cache, Path(scratch) / "subset_adaptive.json",
                                        *only, *extra)
        others, _ = run_suites(cache, Path(scratch) / "others.json",
                               "-k", f"not ({only[1]})", FIXED_N)
        # what fixed n left inconclusive, given a cap beyond it (draws new images)
        open_ = sorted({row["nodeid"] for row in fixed["checks"]
                        if row["outcome"] == "inconclusive" and ".t2i.yaml::" in row["nodeid"]})
        beyond = {}
        if open_ and args.beyond_max:
            beyond_fixed, _ = run_suites(cache, Path(scratch) / "beyond_fixed.json",
                                         FIXED_N, targets=tuple(open_))
            beyond_adaptive, _ = run_suites(cache, Path(scratch) / "beyond.json",
                                            f"--t2i-adaptive-max={args.beyond_max}",
                                            *[e for e in extra if "spending" in e],
                                            targets=tuple(open_))
            beyond = beyond_n(beyond_fixed, beyond_adaptive, args.beyond_max)
    result = summary(args, fixed, adaptive)
    checks, images_fixed = result.pop("checks"), result["images_fixed"]
    result.update({
        "adaptive_kinds_only": {  # a run of only the checks of kinds that can stop early
            "selection": only[1],
            "images_fixed": images_read(subset_fixed),
            "images_adaptive": images_read(subset_adaptive),
            "images_ratio": round(images_read(subset_adaptive) / images_read(subset_fixed), 4)
            if images_read(subset_fixed) else None,
            "verdicts_changed": compare(subset_fixed, subset_adaptive)["verdicts_changed"]},
        "fixed_kinds_only": {  # the other checks alone: the run's images at any adaptive cost
            "images": images_read(others),
            "share_of_images_fixed": round(images_read(others) / images_fixed, 4)
            if images_fixed else None},
        "inconclusive_at_fixed_n": beyond,
        "seconds": {"fixed": round(fixed_seconds, 1), "adaptive": round(adaptive_seconds, 1)},
        "checks": checks,
        **({"images_by_check": breakdown} if breakdown is not None else {}),
    })
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items()
                      if k not in ("checks", "images_by_check")}, indent=1))


if __name__ == "__main__":
    main()
