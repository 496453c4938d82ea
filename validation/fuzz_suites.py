"""Fuzz the suite loader: mutated example suites must load, or fail as one file:line error.

Every mutant of ``example_suites/*.t2i.yaml`` (alias and merge-key bombs, control characters,
deep nesting, hostile template fields, foreign tags, byte flips, truncations, scalars YAML
cannot build, integers past a float, marks pytest refuses, line breaks in names, ...) is loaded
with ``load_suite`` in a worker process, one file at a time, and counted as

* ``clean``: a ``SuiteError`` whose message names the file;
* ``valid``: a ``Suite``;
* ``traceback``: any other exception (or a ``SuiteError`` not naming the file);
* ``hang``: no answer within ``--timeout`` seconds (the worker is killed and restarted).

The worker runs under an address-space limit, so a runaway allocation shows as a
``MemoryError`` traceback instead of taking the machine down; each file's time and
``tracemalloc`` peak are recorded.

    python validation/fuzz_suites.py --count 1000 --seed 0

``mutate`` is also what ``tests/unit/test_suite_fuzz.py`` feeds to hypothesis.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "example_suites").rglob("*.t2i.yaml"))

CONTROL_CHARACTERS = [chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20),
                                       0x7F, *range(0x80, 0x85), 0xFFFE, 0xFFFF)]
HOSTILE_FIELDS = ("{subject:>2000000000}", "{subject.__class__.__mro__}", "{subject.upper}",
                  "{subject[0]}", "{subject!r}", "{0}", "{}", "{subject", "subject}",
                  "{subject:{subject}}", "{__import__}", "{{subject}}")
TAGS = ("!!python/object/apply:os.system", "!!python/name:os.system", "!!set", "!!omap",
        "!!binary", "!custom", "!!python/object:builtins.dict", "!<tag:example.com,2000:x>")
TOKENS = (": ", "- ", "&a ", "*a", "? ", "|\n", ">\n", "%YAML 1.1\n", "---\n", "...\n", "{",
          "}", "[", "]", "'", '"', "#", "<<: *a\n", "\t", "\\", "\n  ")


# -- mutations: text -> text, driven by one ``random.Random`` ------------------------------


def alias_bomb(text: str, rng: random.Random) -> str:
    """A billion-laughs block, its last anchor used as a value the loader reads."""
    levels, width = rng.randint(3, 14), rng.randint(2, 10)
    lines = [f"x0: &x0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"x{level}: &x{level} [{', '.join([f'*x{level - 1}'] * width)}]")
    block = "\n".join(lines) + "\n"
    key = rng.choice(("subjects", "checks", "axes", "defaults", "filter", "unknown_key"))
    return block + text + f"\n{key}: *x{levels - 1}\n"


def merge_bomb(text: str, rng: random.Random) -> str:
    """The same through ``<<`` merge keys, which copy pairs instead of sharing nodes."""
    levels, width = rng.randint(3, 12), rng.randint(2, 9)
    lines = ["m0: &m0 {a: 1, b: 2, c: 3}"]
    for level in range(1, levels):
        merged = ", ".join([f"*m{level - 1}"] * width)
        lines.append(f"m{level}: &m{level}\n  <<: [{merged}]\n  k{level}: v")
    return "\n".join(lines) + "\n" + text + f"\ndefaults: *m{levels - 1}\n"


def recursive_alias(text: str, rng: random.Random) -> str:
    return text + rng.choice(("\nloop: &l [*l]\n", "\nloop: &l {a: *l}\n",
                              "\nloop: &l\n  - a\n  - *l\n"))


def control_characters(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 5)):
        chars.insert(rng.randrange(len(chars) + 1), rng.choice(CONTROL_CHARACTERS))
    return "".join(chars)


def deep_nesting(text: str, rng: random.Random) -> str:
    depth = rng.choice((10, 30, 33, 100, 600, 5000, 50000))
    opener, closer = rng.choice((("[", "]"), ("{a: ", "}")))
    value = opener * depth + "x" + closer * depth
    if rng.random() < 0.3:  # block style, one level per line
        value = "\n" + "".join("  " * i + "- \n" for i in range(min(depth, 2000))) + "x"
    key = rng.choice(("subjects", "axes", "checks", "deep"))
    return text + f"\n{key}: {value}\n"


def hostile_template(text: str, rng: random.Random) -> str:
    field = rng.choice(HOSTILE_FIELDS)
    if "{subject}" in text and rng.random() < 0.8:
        return text.replace("{subject}", rng.choice(("{subject} ", "")) + field, 1)
    return text + f'\nprompt: "a {field}"\n'


def foreign_tag(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines) if ": " in line]
    if not candidates:
        return f"{rng.choice(TAGS)} " + text
    i = rng.choice(candidates)
    key, _, value = lines[i].partition(": ")
    lines[i] = f"{key}: {rng.choice(TAGS)} {value}"
    return "\n".join(lines) + "\n"


def byte_flips(text: str, rng: random.Random) -> str:
    data = bytearray(text.encode("utf-8", errors="surrogateescape"))
    for _ in range(rng.randint(1, 20)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return data.decode("utf-8", errors="surrogateescape")


def truncate(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


def shuffle_lines(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 6)):
        if len(lines) > 1:
            action = rng.choice(("swap", "drop", "duplicate", "dedent", "indent"))
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if action == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            elif action == "drop":
                del lines[i]
            elif action == "duplicate":
                lines.insert(j, lines[i])
            elif action == "dedent":
                lines[i] = lines[i].lstrip()
            else:
                lines[i] = "  " + lines[i]
    return "\n".join(lines) + "\n"


def insert_tokens(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 8)):
        chars.insert(rng.randrange(len(chars) + 1), rng.choice(TOKENS))
    return "".join(chars)


def huge_scalar(text: str, rng: random.Random) -> str:
    size = rng.choice((10_000, 600_000, 1_200_000))
    return text + f"\nsubjects: [{'x' * size}]\n"


def many_values(text: str, rng: random.Random) -> str:
    count = rng.choice((100, 5_000, 30_000))
    return text + "\nsubjects: [" + ", ".join(f"s{i}" for i in range(count)) + "]\n"


def cross_product(text: str, rng: random.Random) -> str:
    """Subjects x axes x checks far past what a suite may make (1,000 x 60 x 100 once
    asked for 6,000,000 items)."""
    subjects, axes, checks = rng.choice((10, 200, 1000)), rng.choice((5, 30, 60)), rng.choice((5, 50, 100))
    names = ", ".join(f"a{i}" for i in range(axes))
    return (f'prompt: "a photo of a {{subject}}"\n'
            f"subjects: [{', '.join(f's{i}' for i in range(subjects))}]\naxes:\n"
            + "".join(f'  a{i}: {{question: "q{i}", choices: [x, y]}}\n' for i in range(axes))
            + "checks:\n" + "".join(f"  - {{id: c{i}, kind: entropy_below, axes: [{names}], "
                                     f"threshold: 0.5}}\n" for i in range(checks)))


def auto_planning(text: str, rng: random.Random) -> str:
    """``images_per_prompt: auto`` with a tight margin, many choices or many axes (once a raw
    traceback, 36 s and 1.3 GB, or a 2.4 GiB allocation)."""
    choices = rng.choice((2, 5, 16, 17, 64, 200, 2000))
    axes = rng.choice((1, 3, 12))
    margin = rng.choice((0.001, 0.01, 0.05, 0.2))
    names = ", ".join(f"a{i}" for i in range(axes))
    return ('prompt: "a photo of a {subject}"\nsubjects: [mug]\naxes:\n'
            + "".join(f'  a{i}: {{question: "q{i}", choices: [{", ".join(f"c{j}" for j in range(choices + i % 2))}]}}\n'
                      for i in range(axes))
            + f"checks:\n  - {{id: auto, kind: {rng.choice(('entropy_below', 'w1_below'))}, "
              f"axes: [{names}], threshold: {rng.choice((0.1, 0.5, 0.9))}, "
              f"images_per_prompt: auto, margin: {margin}}}\n")


BAD_SCALARS = ("2001-02-30", "2001-13-01", '!!int ""', "!!int abc", "!!bool maybe",
               '!!bool ""', "!!float abc", '!!float ""', "!!timestamp tomorrow",
               "!!null notnull", "0x", "0o9", "1_", "!!int 0b2", "2001-02-29 25:61:00")
NUMBER_KEYS = ("threshold", "confidence", "margin", "tolerance", "epsilon", "seed", "guidance",
               "steps", "images_per_prompt", "height", "width", "lambda", "k")
MARKS = ("__class__", "_private", "__getattr__", "__init__", "_", "parametrize", "skipif",
         "usefixtures", "filterwarnings", "xfail", "t2ibias", "a" * 300)
LINE_CHARACTERS = ("\\n", "\\r", "\\t", "\\v", "\\f", "\\x85", "\\u2028", "\\u2029",
                   "\\x1b[2J", "\\u202e", "\\x00", "\\x7f")
"""Escapes written inside double quotes, so the YAML reader accepts them and the loader
must (``control_characters`` inserts raw ones, which the reader refuses)."""


def bad_scalar(text: str, rng: random.Random) -> str:
    """A scalar its YAML constructor cannot build, as a value the loader reads (once
    ValueError, IndexError or KeyError from inside PyYAML)."""
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines) if ": " in line]
    scalar = rng.choice(BAD_SCALARS)
    if candidates and rng.random() < 0.6:
        i = rng.choice(candidates)
        key, _, _ = lines[i].partition(": ")
        lines[i] = f"{key}: {scalar}"
        return "\n".join(lines) + "\n"
    key = rng.choice(("seed", "guidance", "steps", "images_per_prompt", "height"))
    return text + f"\ndefaults: {{{key}: {scalar}}}\n"


def big_integer(text: str, rng: random.Random) -> str:
    """An integer past a float (1e308), past 2^63, or past Python's 4,300-digit limit, in a
    number field of a check, the defaults, an ideal or a target."""
    digits = rng.choice((19, 20, 40, 309, 400, 4300, 4301, 20000))
    number = rng.choice(("", "-")) + "9" * digits
    key = rng.choice(NUMBER_KEYS)
    where = rng.random()
    if where < 0.4 and re.search(r"\b(threshold|confidence): [0-9.]+", text):
        return re.sub(r"\b(threshold|confidence): [0-9.]+", lambda m: f"{m.group(1)}: {number}",
                      text, count=1)
    if where < 0.6:
        return text + f"\ndefaults: {{{rng.choice(('seed', 'guidance', 'steps', 'height'))}: {number}}}\n"
    if where < 0.8:
        return (text + f'\naxes:\n  g: {{question: "q", choices: [a, b], ideal: {{a: {number}, '
                f'b: 0}}}}\n')
    return (f'prompt: "a photo of a {{subject}}"\nsubjects: [mug]\naxes:\n  g: {{question: "q", '
            f"choices: [a, b]}}\nchecks:\n  - {{id: c, kind: "
            f"{rng.choice(('max_skew_below', 'w1_below', 'entropy_below'))}, axes: [g], "
            f"threshold: 0.3, {key}: {number}"
            + (f", target: {{a: {number}, b: 1}}" if rng.random() < 0.5 else "") + "}\n")


def hostile_marks(text: str, rng: random.Random) -> str:
    """Marks pytest refuses (``__class__`` once reached MarkGenerator as an attribute)."""
    marks = ", ".join(rng.choice(MARKS) for _ in range(rng.randint(1, 3)))
    if "marks: [" in text and rng.random() < 0.7:
        return text.replace("marks: [", f"marks: [{marks}, ", 1)
    return (f'prompt: "a photo of a {{subject}}"\nsubjects: [mug]\naxes:\n  g: {{question: "q", '
            f"choices: [a, b]}}\nchecks:\n  - {{id: c, kind: w1_below, axes: [g], "
            f"threshold: 0.3, marks: [{marks}]}}\n")


def names_with_line_breaks(text: str, rng: random.Random) -> str:
    """A line break or control character inside a quoted subject, choice, id, mark or suite
    name (``"doctor\\nPASSED ..."`` once forged a result line)."""
    char = rng.choice(LINE_CHARACTERS)
    forged = f"doctor{char}PASSED integ.t2i.yaml::fake - all good"
    field = rng.choice(("subjects", "choices", "id", "suite", "question", "prompt"))
    if field == "subjects" and "subjects: [" in text:
        return text.replace("subjects: [", f'subjects: ["{forged}", ', 1)
    if field == "choices" and "choices: [" in text:
        return text.replace("choices: [", f'choices: ["{forged}", ', 1)
    if field == "id" and (found := re.search(r"id: ([A-Za-z_]+)", text)):
        return text.replace(found.group(0), f'id: "{found.group(1)}{char}x"', 1)
    if field == "question":
        return text.replace('question: "', f'question: "{char}', 1)
    if field == "prompt":
        return text.replace('prompt: "', f'prompt: "{char}', 1)
    kept = "\n".join(line for line in text.splitlines() if not line.startswith("suite:"))
    return f'suite: "{forged}"\n' + kept + "\n"


MUTATIONS = (alias_bomb, merge_bomb, recursive_alias, control_characters, deep_nesting,
             hostile_template, foreign_tag, byte_flips, truncate, shuffle_lines, insert_tokens,
             huge_scalar, many_values, cross_product, auto_planning, bad_scalar, big_integer,
             hostile_marks, names_with_line_breaks)


def mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """One to three mutations of ``text``; returns the mutant and the mutations' names."""
    chosen = [rng.choice(MUTATIONS) for _ in range(rng.choice((1, 1, 2, 3)))]
    for mutation in chosen:
        text = mutation(text, rng)
    return text, [mutation.__name__ for mutation in chosen]


def write_mutant(path: Path, text: str) -> None:
    """Bytes as the mutation left them (flips may have made invalid UTF-8)."""
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))


# -- running: one worker process, killed and restarted on a hang ---------------------------


def classify(path: Path) -> tuple[str, str]:
    """Load ``path`` and plan it as collection does (``images_per_prompt: auto`` included):
    ("clean" | "valid" | "traceback", detail)."""
    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.planner import PlanningBudget, plan_check
    from pytest_t2ibias.suite import SuiteError, load_suite

    try:
        suite = load_suite(path)
        settings, budget = Settings.standalone(), PlanningBudget()
        for check in suite.checks:
            plan_check(settings, suite, check, budget)
        return "valid", ""
    except SuiteError as exc:
        if str(path) in str(exc) or path.name in str(exc):
            return "clean", str(exc).splitlines()[0][-120:]
        return "traceback", f"SuiteError without the file: {exc}"[:200]
    except BaseException as exc:  # counting is the point
        return "traceback", f"{type(exc).__name__}: {exc}"[:200]


def _worker(connection, memory_limit: int) -> None:
    import resource
    import tracemalloc

    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    import pytest_t2ibias.items.file
    import pytest_t2ibias.suite.load  # noqa: F401

    while True:
        path = connection.recv()
        if path is None:
            return
        tracemalloc.start()
        started = time.perf_counter()
        outcome, detail = classify(Path(path))
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        connection.send((outcome, detail, seconds, peak))


class Runner:
    """A worker process loading one file at a time, replaced when it stops answering."""

    def __init__(self, timeout: float, memory_limit: int) -> None:
        self.timeout = timeout
        self.memory_limit = memory_limit
        self.context = multiprocessing.get_context("spawn")
        self.process = None
        self.connection = None

    def start(self) -> None:
        self.connection, child = self.context.Pipe()
        self.process = self.context.Process(target=_worker, args=(child, self.memory_limit),
                                            daemon=True)
        self.process.start()

    def load(self, path: Path) -> tuple[str, str, float, int]:
        if self.process is None or not self.process.is_alive():
            self.start()
        self.connection.send(str(path))
        if self.connection.poll(self.timeout + 20):  # + 20: a fresh worker's imports
            try:
                return self.connection.recv()
            except EOFError:
                pass
        died = self.process.exitcode
        self.stop(kill=True)
        if died is not None:
            return "traceback", f"worker died (exit code {died})", self.timeout, 0
        return "hang", f"no answer in {self.timeout:.0f} s", self.timeout, 0

    def stop(self, kill: bool = False) -> None:
        if self.process is None:
            return
        if kill:
            self.process.kill()
        else:
            self.connection.send(None)
        self.process.join(5)
        self.process = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per file")
    parser.add_argument("--memory-limit-mb", type=int, default=2048)
    parser.add_argument("--json", type=Path, help="write counts and the worst files here")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))

    rng = random.Random(args.seed)
    counts: collections.Counter[str] = collections.Counter()
    by_mutation: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    tracebacks: list[dict] = []
    slowest = (0.0, "")
    peak = (0, "")
    runner = Runner(args.timeout, args.memory_limit_mb * 2**20)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        for number in range(args.count):
            source = rng.choice(EXAMPLES)
            text, names = mutate(source.read_text(), rng)
            path = Path(scratch) / f"mutant{number:05d}.t2i.yaml"
            write_mutant(path, text)
            outcome, detail, seconds, peak_bytes = runner.load(path)
            counts[outcome] += 1
            for name in names:
                by_mutation[name][outcome] += 1
            if outcome in ("traceback", "hang"):
                tracebacks.append({"file": number, "from": source.name, "mutations": names,
                                   "outcome": outcome, "detail": detail})
            slowest = max(slowest, (seconds, f"{number} {names}"))
            peak = max(peak, (peak_bytes, f"{number} {names}"))
            path.unlink()
        runner.stop()
    elapsed = time.perf_counter() - started

    print(f"{args.count} mutated suites (seed {args.seed}) in {elapsed:.1f} s")
    for outcome in ("clean", "valid", "traceback", "hang"):
        print(f"  {outcome:<10} {counts[outcome]}")
    print(f"  slowest file  {slowest[0]:.3f} s  ({slowest[1]})")
    print(f"  peak memory   {peak[0] / 2**20:.1f} MB traced  ({peak[1]})")
    print("by mutation (clean/valid/traceback/hang):")
    for name in sorted(by_mutation):
        c = by_mutation[name]
        print(f"  {name:<20} {c['clean']}/{c['valid']}/{c['traceback']}/{c['hang']}")
    for failure in tracebacks[:20]:
        print(f"  {failure['outcome']}: file {failure['file']} {failure['mutations']}: "
              f"{failure['detail']}")
    if args.json:
        args.json.write_text(json.dumps({
            "count": args.count, "seed": args.seed, "seconds": round(elapsed, 1),
            "counts": dict(counts), "slowest_seconds": round(slowest[0], 3),
            "peak_traced_mb": round(peak[0] / 2**20, 1), "failures": tracebacks,
        }, indent=2))
    return 0 if counts["traceback"] == counts["hang"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
