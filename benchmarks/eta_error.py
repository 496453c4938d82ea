"""How wrong the whole-run ETA was: at 25%, 50% and 75% of a run, the actual time left minus
the ETA the log's last progress line gave (positive: the ETA promised too early an end).

A log with a wall-clock time on every line is needed, which ``run`` makes::

    python benchmarks/eta_error.py run LOG -- python -m pytest example_suites/ --t2i-cache-dir=/tmp/cold
    python benchmarks/eta_error.py LOG

``eta_example_run_cold.log`` beside this file is the example run (README's command) cold, into
a fresh cache, on a mostly idle 2-core machine, recorded this way at the end of session 7:
895 s, 26 progress lines, none inside pytest's; the ETA's error at 25/50/75% was -113, +55
and +46 s. (The first recording, on a loaded machine while the estimates were 4-12% high,
gave -318, -443 and -222 s; before the search kinds were estimated, -639, -749, -381 s.)

Each line of LOG is ``<unix seconds> <text>``; ``START`` and ``END`` lines bracket the run. The
run's length is END - START; at each fraction, the predicted time left is the ETA of the latest
``t2ibias: run: ... ETA m:ss`` line, less the seconds since that line was written.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ETA = re.compile(r"t2ibias: run: (\d+)/(\d+) images, (\d+)/(\d+) answers .*ETA (\?|[\d:]+)")
RESULT_LINE = re.compile(r"^\S+\.(py|yaml) ")


def seconds(clock: str) -> float:
    value = 0.0
    for part in clock.split(":"):
        value = value * 60 + int(part)
    return value


def record(log: Path, command: list[str]) -> int:
    """Run ``command``, its stdout and stderr into ``log``, each line with the time it came."""
    with log.open("w") as out:
        out.write(f"{time.time():.3f} START\n")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, bufsize=1)
        for line in process.stdout:
            out.write(f"{time.time():.3f} {line}")
            out.flush()
        code = process.wait()
        out.write(f"{time.time():.3f} END\n")
    return code


def analyse(log: Path, fractions: tuple[float, ...] = (0.25, 0.5, 0.75)) -> dict:
    stamped = []
    for raw in log.read_text().splitlines():
        stamp, _, text = raw.partition(" ")
        try:
            stamped.append((float(stamp), text))
        except ValueError:
            continue
    start = next(t for t, text in stamped if text == "START")
    end = next(t for t, text in reversed(stamped) if text == "END")
    etas = [(t, m) for t, text in stamped if (m := ETA.search(text))]
    rows = []
    for fraction in fractions:
        at = start + fraction * (end - start)
        before = [(t, m) for t, m in etas if t <= at and m.group(5) != "?"]
        if not before:
            rows.append({"fraction": fraction, "error_s": None})
            continue
        t, m = before[-1]
        predicted = seconds(m.group(5)) - (at - t)
        actual = end - at
        rows.append({"fraction": fraction, "at_s": round(at - start), "actual_left_s": round(actual),
                     "predicted_left_s": round(predicted), "error_s": round(actual - predicted),
                     "line": f"{m.group(1)}/{m.group(2)} images, {m.group(3)}/{m.group(4)} answers"})
    texts = [text for _, text in stamped]
    progress = sum(text.startswith("t2ibias: run:") for text in texts)
    broken = [text for text in texts if "t2ibias: " in text and not text.startswith("t2ibias: ")
              and RESULT_LINE.match(text)]
    return {"run_s": round(end - start), "progress_lines": progress,
            "progress_inside_pytest_lines": len(broken), "eta": rows}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        if "--" not in argv:
            raise SystemExit("usage: eta_error.py run LOG -- COMMAND ...")
        split = argv.index("--")
        return record(Path(argv[1]), argv[split + 1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    args = parser.parse_args(argv)
    result = analyse(args.log)
    print(f"run {result['run_s']} s; {result['progress_lines']} progress lines; "
          f"{result['progress_inside_pytest_lines']} inside a line of pytest's results")
    for row in result["eta"]:
        if row["error_s"] is None:
            print(f"  {row['fraction']:.0%}: no ETA yet")
            continue
        print(f"  {row['fraction']:.0%} ({row['at_s']} s, {row['line']}): actual left "
              f"{row['actual_left_s']} s, ETA {row['predicted_left_s']} s, error "
              f"{row['error_s']:+d} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
