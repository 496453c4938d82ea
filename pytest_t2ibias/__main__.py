"""``python -m pytest_t2ibias COMMAND``: fill the cache, compare saved runs, render a report,
look after the cache.

- ``prefetch [PATHS] [--t2i-... options]``: collects the suites as ``pytest`` would with the
  same options, computes the session plan (``prefetch``: every image and answer the selected
  checks can name up front) and runs no check, so the ``pytest`` run that follows on the same
  cache generates nothing. Run it under ``accelerate launch --num_processes N [--cpu]`` to
  split the plan's requests between N processes (one a GPU) with accelerate's
  ``PartialState().split_between_processes``; they meet at ``wait_for_everyone()`` between
  the images and the answers. The processes share the cache directory
  (``--t2i-cache-dir``), whose per-key claims keep them from computing anything twice.
- ``compare A B [--fail EXPR ...]``: the figures of run B against saved run A (``baseline``),
  exit 1 when one drifted beyond the criteria.
- ``report RUN --html OUT.html``: the HTML report of a saved run (``reports.html.write_html``).
- ``cache stats`` / ``cache prune``: what the cache holds; least recently used out first.
- ``label SUITE [--out DIR] [--per-class N] [--port P] [--t2i-... options]``: a local page
  (127.0.0.1) on which a person labels the images the suite's checks draw, writing the
  ``index.jsonl`` its ``judge_calibration.folder`` names (``labelling``).
- ``schema``: the JSON Schema of ``*.t2i.yaml`` suites (``suite.schema``), for an editor.

Bad input (a missing file, a saved run that is not a report) is one line on stderr and exit
status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .kinds import PlannedItem
    from .suite_spec import AxisSpec

PROG = "python -m pytest_t2ibias"
DEFAULT_STORAGE = Path(".t2ibias") / "runs"
DEFAULT_CACHE = Path(".t2ibias_cache")
CACHE_DEFAULT = ("the ini file's t2i_cache_dir, else <rootdir>/.t2ibias_cache, the rootdir "
                 "found as pytest finds it from the working directory")
STORAGE_HELP = ("where saved runs are (pytest's --t2i-storage); default: the ini file's "
                "t2i_storage, else <rootdir>/.t2ibias/runs, the rootdir found as pytest finds "
                "it from the working directory")
BAD_INPUT = 2
_INI_SECTIONS = {"pytest.ini": "pytest", ".pytest.ini": "pytest", "tox.ini": "pytest",
                 "setup.cfg": "tool:pytest"}


def project_root(start: Path | None = None) -> tuple[Path, dict[str, str], Path | None]:
    """pytest's rootdir seen from ``start`` (the working directory), its ini values and the
    ini file: the nearest folder with a pytest ini file (``pytest.ini``, a ``pyproject.toml``
    with ``[tool.pytest.ini_options]``, ``tox.ini`` with ``[pytest]``, ``setup.cfg`` with
    ``[tool:pytest]``), else the nearest with a ``pyproject.toml`` or ``setup.py``, else
    ``start``. Nothing above the project is looked in for a cache or saved runs: a
    ``.t2ibias_cache`` planted in an ancestor (``/tmp``) is never taken for this project's."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
            values = _pytest_ini(folder / name)
            if values is not None:
                return folder, values, folder / name
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() or (folder / "setup.py").is_file():
            return folder, {}, None
    return here, {}, None


def _pytest_ini(path: Path) -> dict[str, str] | None:
    """The pytest section of an ini file as strings; None when it has none (or is no file)."""
    from ._files import SMALL_JSON_BYTES, read_bounded

    try:
        text = read_bounded(path, SMALL_JSON_BYTES).decode("utf-8")
    except (OSError, ValueError):
        return None
    try:
        if path.name == "pyproject.toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # Python 3.10: pytest's own dependency
                import tomli as tomllib
            table = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options")
            return None if not isinstance(table, dict) else {k: str(v) for k, v in table.items()}
        import iniconfig

        parsed = iniconfig.IniConfig(str(path), data=text)
        section = _INI_SECTIONS[path.name]
        if section not in parsed:
            return {} if path.name in ("pytest.ini", ".pytest.ini") else None
        return dict(parsed[section].items())
    except Exception:  # an ini pytest itself would refuse: not this project's
        return None


def default_folder(ini_key: str, default: Path, start: Path | None = None) -> Path:
    """The ini file's ``ini_key`` (relative to the ini file's folder), else ``default``
    under the rootdir: where pytest run here would put the cache or the saved runs."""
    root, values, ini = project_root(start)
    if values.get(ini_key):
        return ((ini.parent if ini else root) / Path(values[ini_key]).expanduser()).absolute()
    return root / default


class Prefetch:
    """A pytest plugin that replaces the test loop with the session plan."""

    def __init__(self) -> None:
        self.planned = 0

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from ._session import session_of

        session_of(session.config).plan.execute_before_items = False  # this loop prefetches

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:  # collection errors: let pytest report them
            return False
        from ._session import session_of
        from .prefetch import prefetch

        share, barrier, rank = _distribution()
        t2i = session_of(session.config)
        items, works = t2i.plan.first_looks()  # the session plan's, its work already known
        self.planned = prefetch(items, t2i.instrument, share=share, barrier=barrier,
                                on_error=_warn, works=works)
        work = t2i.requests.counters
        line = (f"prefetch{rank}: {self.planned} checks planned; {work.images_generated} images "
                f"generated, {work.images_from_cache} from the cache; {work.answers_scored} "
                f"answers scored, {work.answers_from_cache} from the cache")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:  # None under -p no:terminal
            reporter.write_line(line)
        return True


def _distribution() -> tuple[Callable[[list], list] | None, Callable[[], None] | None, str]:
    """This process's share and the barrier under ``accelerate launch`` (or torchrun)."""
    if int(os.environ.get("WORLD_SIZE", "1")) < 2:
        return None, None, ""
    import torch
    from accelerate import PartialState

    # Without a GPU (or told so) the processes meet over gloo: accelerate's MULTI_CPU.
    told = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    state = PartialState(cpu=told or not torch.cuda.is_available())

    def share(requests: list) -> list:
        with state.split_between_processes(requests) as mine:
            return list(mine)

    return share, state.wait_for_everyone, f"[{state.process_index}/{state.num_processes}]"


def _warn(item, error: BaseException) -> None:
    print(f"prefetch: {item.suite.name} {item.check.id} {item.subject}: not planned "
          f"({type(error).__name__}: {error}); its test run computes it", file=sys.stderr)


PREFETCH_USAGE = f"""usage: {PROG} prefetch [PATHS ...] [--t2i-OPTION ...] [pytest options]

Compute and cache every image and answer the selected checks need, and run no check: the
pytest run that follows on the same cache generates nothing. PATHS and options are pytest's
(-k and -m select checks as they do there); under `accelerate launch --num_processes N` the
work is split between N processes sharing --t2i-cache-dir.
"""


def prefetch_help() -> str:
    """``prefetch --help``: its own usage and the plugin's options, not all of pytest's."""
    from ._pytest_options import _with_default
    from ._settings import OPTIONS

    lines = [PREFETCH_USAGE, "options (each also an ini key; see pytest --help for the rest):"]
    for option in OPTIONS:
        lines.append(f"  {option.cli}")
        lines.append(f"      {_with_default(option)}")
    return "\n".join(lines)


def prefetch_command(args: list[str]) -> int:
    if "-h" in args or "--help" in args:
        print(prefetch_help())
        return 0
    # this package is imported already (python -m): its modules cannot be assertion-rewritten
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return int(pytest.main(["-p", "no:cacheprovider", *quiet, *args], plugins=[Prefetch()]))


# -- label -------------------------------------------------------------------------------------


LABEL_USAGE = f"""usage: {PROG} label SUITE [--out DIR] [--per-class N] [--port P] [--t2i-OPTION ...]

Serve a labelling page on 127.0.0.1 (the address is printed; Ctrl-C stops it): the images
SUITE's selected checks draw (from the cache; anything absent is generated as the run would),
one question at a time for each axis whose judge_calibration names a folder, written to that
folder's index.jsonl with the images beside it. A second session resumes where it stands.

  --out DIR        write here (every judged axis of the checks), not the suite's folder
  --per-class N    labels a class to aim for (default: what --t2i-plan says the checks need)
  --port P         listen on P (default: a free port)
Other options are pytest's and the plugin's (-k selects checks; --t2i-model, --t2i-cache-dir).
"""


class Labeller:
    """A pytest plugin that replaces the test loop with the labelling page."""

    def __init__(self, out: Path | None, per_class: int | None, port: int) -> None:
        self.out, self.per_class, self.port = out, per_class, port
        self.problem: str | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from ._session import session_of

        session_of(session.config).plan.execute_before_items = False  # nothing runs

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:
            return False
        from ._session import session_of
        from .kinds import work_of
        from .labelling import LabelBook, LabelSession, LabelTask, image_file, serve

        t2i = session_of(session.config)
        items, works = t2i.plan.first_looks()
        folders: dict[str, Path] = {}
        tasks: list[LabelTask] = []
        needs: dict[str, int] = {}
        for item, known in zip(items, works):
            work = known if known is not None else work_of(item)
            if work.error is not None:  # its needs cannot be worked out: its run says why
                continue
            instrument = t2i.instrument(item.plan)
            for draw in work.planned:
                axes = [axis for axis in draw.axes if self._labelled(axis, folders)]
                if not axes:
                    continue
                # role None: a --t2i-images folder's images, asked as prefetch asks them
                images = instrument.images([draw.prompt], role=draw.role,  # type: ignore[arg-type]
                                           per_prompt=draw.images)
                for axis in axes:
                    needs[axis.name] = max(needs.get(axis.name, 0), self.per_class or
                                           labels_needed(item, axis))
                    tasks += [LabelTask(image_file(image.content_hash), axis, image.prompt,
                                        image.image) for image in images]
        if len(set(folders.values())) != 1:
            self.problem = ("no selected check reads an axis whose judge_calibration names a "
                            "folder; pass --out DIR" if not folders else
                            "the axes name different folders ("
                            + ", ".join(f"{a}: {f}" for a, f in sorted(folders.items()))
                            + "); select one with -k or pass --out DIR")
            return True
        folder = next(iter(folders.values()))
        suites = sorted({item.suite.name for item in items})
        book = LabelBook(folder)
        try:
            book.answered()
        except (ValueError, TypeError, KeyError, AttributeError) as error:  # a hand-edited index
            self.problem = f"{book.index} is not one JSON object with a \"file\" a line ({error})"
            return True
        labeller = LabelSession(", ".join(suites), tasks, book, needs)
        server = serve(labeller, self.port)
        work_done = t2i.requests.counters
        print(f"t2ibias label: {len(labeller.tasks)} questions on {len(folders)} axes "
              f"({work_done.images_from_cache} images from the cache, "
              f"{work_done.images_generated} generated); writing {book.index}", flush=True)
        print(f"t2ibias label: http://127.0.0.1:{server.server_address[1]}/ "
              f"(Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        return True

    def _labelled(self, axis: AxisSpec, folders: dict[str, Path]) -> bool:
        """Whether the page asks about ``axis``: it names a folder, or --out takes every axis."""
        from .suite_spec import COUNTERFACTUAL_CALIBRATION

        if self.out is not None:
            folders[axis.name] = self.out.absolute()
            return True
        source = axis.calibration_source
        if source is None or source == COUNTERFACTUAL_CALIBRATION:
            return False
        folders[axis.name] = Path(source)
        return True


def labels_needed(item: PlannedItem, axis: AxisSpec) -> int:
    """Labels a class the item's checks need on ``axis`` (``planner.labels_per_class``)."""
    from .planner import labels_per_class

    return labels_per_class(item, axis)


def label_command(args: list[str]) -> int:
    if "-h" in args or "--help" in args:
        print(LABEL_USAGE)
        return 0
    own = argparse.ArgumentParser(prog=f"{PROG} label", add_help=False)
    own.add_argument("--out", type=Path, default=None)
    own.add_argument("--per-class", type=int, default=None)
    own.add_argument("--port", type=int, default=0)
    try:
        known, rest = own.parse_known_args(args)
    except SystemExit as exit_:
        return int(exit_.code or BAD_INPUT)
    if known.per_class is not None and known.per_class < 1:
        print(f"{PROG} label: --per-class must be 1 or more", file=sys.stderr)
        return BAD_INPUT
    labeller = Labeller(known.out, known.per_class, known.port)
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning", "-q"]
    status = int(pytest.main(["-p", "no:cacheprovider", *quiet, *rest], plugins=[labeller]))
    if labeller.problem:
        print(f"{PROG} label: {labeller.problem}", file=sys.stderr)
        return BAD_INPUT
    return status


# -- compare, report ---------------------------------------------------------------------------


def compare_command(args: argparse.Namespace) -> int:
    from .runs.compare import compare_runs, parse_criteria
    from .runs.saved import incomplete_reasons, load_report, locate, refuse_incomplete_baseline
    from .runs.table import render_comparison, verdict_line

    criteria = parse_criteria(args.fail)
    storage = args.storage or default_folder("t2i_storage", DEFAULT_STORAGE)
    old_path, new_path = locate(args.old, storage), locate(args.new, storage)
    old, new = load_report(old_path), load_report(new_path)
    if not args.allow_incomplete:
        refuse_incomplete_baseline(old, old_path, "--allow-incomplete")
    for path, report in ((old_path, old), (new_path, new)):
        if reasons := incomplete_reasons(report):
            print(f"note: {path.stem} did not complete ({'; '.join(reasons)}): its missing "
                  f"checks are not compared", file=sys.stderr)
    comparison = compare_runs(old, new, criteria)
    width = max(60, _columns())
    print(render_comparison(comparison, f"{old_path.stem} ({old_path})", width,
                            color=sys.stdout.isatty(), verbose=args.verbose), end="")
    print(verdict_line(comparison, old_path.stem, "--fail"))
    return 1 if comparison.drifted else 0


MALFORMED = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError,
             OverflowError, ZeroDivisionError)
"""What drawing a value of an unexpected type or size raises: a saved run edited by hand or
damaged holds anything in its figures and header."""


def report_command(args: argparse.Namespace) -> int:
    from ._text import shown
    from .errors import RunError
    from .reports.html import render_html, write_html
    from .runs.saved import load_report, locate, rows_of

    path = locate(args.run, args.storage or default_folder("t2i_storage", DEFAULT_STORAGE))
    saved = load_report(path)
    cache_dir = args.cache_dir
    if cache_dir is None:  # the project's, if there is one; else a report without images
        found = default_folder("t2i_cache_dir", DEFAULT_CACHE)
        cache_dir = found if found.is_dir() else None
    rows, run = rows_of(saved), saved.get("run") or {}
    try:
        write_html(args.html, rows, run=run, cache_dir=cache_dir)
    except MALFORMED:  # find what cannot be drawn, draw the rest, and say so in one line
        def draws(rows: list, run: dict) -> bool:
            try:
                render_html(rows, run=run)
            except MALFORMED:
                return False
            return True

        bad = [row for row in rows if not draws([row], {})]
        header_drawn = draws([], run)
        try:
            write_html(args.html, [row for row in rows if row not in bad],
                       run=run if header_drawn else {}, cache_dir=cache_dir)
        except MALFORMED as exc:
            raise RunError(f"{path}: cannot be drawn ({type(exc).__name__}: {exc}); a saved run "
                           f"is the --t2i-json report of a run") from None
        left_out = [shown(row.nodeid or "?")[:80] for row in bad[:5]]
        raise RunError(f"{path}: wrote {args.html} without what cannot be drawn (malformed: "
                       f"{'the run header, ' if not header_drawn else ''}{len(bad)} checks"
                       f"{': ' + ', '.join(left_out) if left_out else ''}); a saved run is the "
                       f"--t2i-json report of a run") from None
    print(f"wrote {args.html} ({len(saved['checks'])} checks of {path})")
    return 0


def runs_list_command(args: argparse.Namespace) -> int:
    from .runs.trend import list_text, load_runs

    storage = args.storage or default_folder("t2i_storage", DEFAULT_STORAGE)
    runs, skipped = load_runs(storage, args.match)
    for why in skipped:
        print(f"{PROG} runs: skipped {why}", file=sys.stderr)
    if not runs:
        print(f"no saved runs in {storage}" + (f" named *{args.match}*" if args.match else ""))
        return 0
    print(list_text(runs), end="")
    return 0


def runs_trend_command(args: argparse.Namespace) -> int:
    from .reports.output import write_report_text
    from .runs.trend import load_runs, trend_csv, trend_html, trend_rows

    runs, skipped = load_runs(args.storage or default_folder("t2i_storage", DEFAULT_STORAGE), args.match)
    for why in skipped:
        print(f"{PROG} runs: skipped {why}", file=sys.stderr)
    rows = trend_rows(runs, args.check)
    text = trend_csv(rows)
    if args.html is not None:
        write_report_text(args.html, trend_html(rows))
        print(f"wrote {args.html} (a chart a figure, {len(runs)} runs)")
    if args.csv is None and args.html is None:
        print(text, end="")
    elif args.csv is not None:
        write_report_text(args.csv, text)
        print(f"wrote {args.csv} ({text.count(chr(10)) - 1} figures of {len(runs)} runs)")
    return 0


# -- cache -------------------------------------------------------------------------------------


def cache_stats_command(args: argparse.Namespace) -> int:
    from .store.admin import KINDS, cache_stats, human_size

    stats = cache_stats(_existing_cache(args.cache_dir))
    print(f"cache {stats.root}: {stats.total_entries} entries, {human_size(stats.total_size)} "
          f"of data, {human_size(stats.on_disk)} on disk (as du counts: blocks, folders, locks)")
    for kind in KINDS:
        print(f"  {kind:<8} {stats.entries[kind]:>8} entries  {human_size(stats.size[kind]):>10}")
    if stats.oldest is not None and stats.newest is not None:
        print(f"  least recently used {_when(stats.oldest)}; most recently {_when(stats.newest)}")
    if stats.lock_files:
        print(f"  {stats.lock_files} lock files left by an older version or a running process "
              f"(cache prune removes those no process holds)")
    return 0


def cache_prune_command(args: argparse.Namespace) -> int:
    from .store.admin import human_size, prune

    if args.older_than is None and args.max_size is None and not args.locks:
        raise UsageProblem("cache prune: say what to remove: --older-than DAYS and/or "
                           "--max-size SIZE, or --locks (add --dry-run to see it first)")
    root = _existing_cache(args.cache_dir)
    result = prune(root, older_than_days=args.older_than, max_size=args.max_size,
                   dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    print(f"cache {root}: {verb} {len(result.removed)} entries ({human_size(result.freed)} of "
          f"data, {human_size(result.freed_on_disk)} on disk); {human_size(result.remaining)} "
          f"left on disk (as du and cache stats count)")
    if result.lock_files:
        print(f"  {verb} {result.lock_files} lock files no process held")
    if result.claimed:
        print(f"  kept {len(result.claimed)} entries another process holds a claim on "
              f"(being computed now)")
    if args.dry_run:
        for entry in result.removed[:args.show]:
            print(f"  {entry.kind:<8} {_when(entry.used)}  {entry.path}")
    return 0


def _existing_cache(given: Path | None) -> Path:
    path = given or default_folder("t2i_cache_dir", DEFAULT_CACHE)
    if not path.is_dir():
        raise UsageProblem(f"no cache directory at {path} (give --cache-dir DIR: the run's "
                           f"--t2i-cache-dir, default <rootdir>/.t2ibias_cache)")
    return path


def _when(seconds: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(seconds).isoformat(sep=" ", timespec="seconds")


def _columns() -> int:
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


# -- the command line --------------------------------------------------------------------------


class UsageProblem(Exception):
    """Input the command cannot use; the message is the whole story."""


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days >= 0")
    return days


def _size(text: str) -> int:
    from .store.admin import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def schema_command(args: argparse.Namespace) -> int:
    from .suite.schema import schema_text

    sys.stdout.write(schema_text())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="pytest-t2ibias outside a test run: fill the cache, compare "
        "saved runs, render a saved run's report, look after the cache.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    commands.add_parser(
        "prefetch", add_help=False,
        help="compute and cache every image and answer the selected checks need, run no check; "
             "takes pytest's paths and --t2i-* options (under `accelerate launch "
             "--num_processes N` the work is split between N processes)")

    commands.add_parser(
        "label", add_help=False,
        help="a labelling page on 127.0.0.1 for the images a suite's checks draw; writes the "
             "index.jsonl its judge_calibration folder names (label --help for its options)")

    compare = commands.add_parser(
        "compare", help="compare the figures of two runs; exit 1 when one drifted beyond --fail",
        description="Compare run NEW with the saved run OLD, figure by figure (every check's "
        "figure and the named estimates in its figures): old -> new, change, and whether it "
        "drifted. Exit status 1 when a figure drifted beyond a --fail criterion, 0 otherwise, "
        "2 on input that is not a report.")
    compare.add_argument("old", metavar="OLD", help="the saved run: a path to a JSON report, or "
                         "a name in --storage (a unique prefix, or latest)")
    compare.add_argument("new", metavar="NEW", help="the run to judge, named the same way")
    compare.add_argument("--fail", action="append", default=[], metavar="EXPR",
                         help="drift that fails: ci (the intervals no longer overlap), value:X "
                         "(moved by more than X), value:X%% (by more than X%% of the saved "
                         "figure); repeatable")
    compare.add_argument("--storage", type=Path, default=None, metavar="DIR", help=STORAGE_HELP)
    compare.add_argument("--allow-incomplete", action="store_true",
                         help="accept an OLD run that did not complete (stopped by -x or "
                         "Ctrl-C, a crashed worker, collection errors); refused otherwise")
    compare.add_argument("-v", "--verbose", action="store_true",
                         help="list every changed figure, not only the drifted ones")
    compare.set_defaults(handler=compare_command)

    report = commands.add_parser(
        "report", help="write the HTML report of a saved run",
        description="Render a saved run (a JSON report) as the HTML report pytest's --t2i-html "
        "writes.")
    report.add_argument("run", metavar="RUN", help="a JSON report, or a saved run's name in "
                        "--storage")
    report.add_argument("--html", required=True, type=Path, metavar="OUT.html",
                        help="where to write the report")
    report.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                        help="the run's cache, for its images; default: " + CACHE_DEFAULT)
    report.add_argument("--storage", type=Path, default=None, metavar="DIR", help=STORAGE_HELP)
    report.set_defaults(handler=report_command)

    runs = commands.add_parser("runs", help="runs list | runs trend: saved runs over time",
                               description="The saved runs (--t2i-save, --t2i-autosave), "
                               "oldest first.")
    runs_commands = runs.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    listing = runs_commands.add_parser("list", help="one line a saved run: date, git revision, "
                                       "the checks' tally, the model")
    trend = runs_commands.add_parser("trend", help="every check's figure and interval in each "
                                     "saved run, as CSV")
    trend.add_argument("--csv", type=Path, default=None, metavar="OUT.csv",
                       help="write the CSV here (default: standard output)")
    trend.add_argument("--html", type=Path, default=None, metavar="OUT.html",
                       help="also draw each figure and its interval over the runs, one chart a "
                       "figure, as a self-contained page")
    trend.add_argument("--check", default=None, metavar="TEXT",
                       help="only checks whose id or node id contains TEXT")
    for action, handler in ((listing, runs_list_command), (trend, runs_trend_command)):
        action.add_argument("--match", default=None, metavar="TEXT",
                            help="only runs whose name contains TEXT (a release, a branch)")
        action.add_argument("--storage", type=Path, default=None, metavar="DIR",
                            help=STORAGE_HELP)
        action.set_defaults(handler=handler)

    schema = commands.add_parser(
        "schema", help="print the JSON Schema of *.t2i.yaml suites (for your editor)",
        description="Print the JSON Schema of *.t2i.yaml suites, generated from the suite "
        "language and the built-in check kinds: python -m pytest_t2ibias schema > "
        ".vscode/t2i-suite.schema.json (docs/yaml-reference.md, \"Editor validation\").")
    schema.set_defaults(handler=schema_command)

    cache = commands.add_parser("cache", help="cache stats | cache prune",
                                description="Look after the cache of images, answers and probes.")
    cache_commands = cache.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    stats = cache_commands.add_parser(
        "stats", help="entries and bytes by kind, least and most recently used")
    stats.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                       help="the cache (pytest's --t2i-cache-dir); default: " + CACHE_DEFAULT)
    stats.set_defaults(handler=cache_stats_command)
    prune = cache_commands.add_parser(
        "prune", help="remove the least recently used entries",
        description="Remove cache entries, least recently used first: those unused for "
        "--older-than DAYS, then more until the cache takes at most --max-size on disk (as du "
        "counts). An entry another "
        "process is computing (its key claimed) is never removed. Everything removed is "
        "computed again by the next run that needs it.")
    prune.add_argument("--older-than", type=_days, default=None, metavar="DAYS",
                       help="remove entries unused for this many days")
    prune.add_argument("--max-size", type=_size, default=None, metavar="SIZE",
                       help="then remove until the cache takes at most SIZE on disk, as du and "
                       "cache stats count (500M, 2G; K, M, G are powers of 1024)")
    prune.add_argument("--locks", action="store_true",
                       help="only remove the lock files no process holds (every prune does)")
    prune.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")
    prune.add_argument("--show", type=int, default=20, metavar="N",
                       help="with --dry-run, list the first N entries that would go (default 20)")
    prune.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                       help="the cache (pytest's --t2i-cache-dir); default: " + CACHE_DEFAULT)
    prune.set_defaults(handler=cache_prune_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "prefetch":  # everything after it is pytest's
        return prefetch_command(argv[1:])
    if argv and argv[0] == "label":  # its own options, then pytest's
        return label_command(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or a usage error it printed (2)
        return int(exit_.code or 0)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    from .errors import CacheError, CriterionError, RunError

    try:
        return handler(args)
    except (RunError, CriterionError, UsageProblem, CacheError) as exc:
        print(f"{PROG} {args.command}: {exc}", file=sys.stderr)
        return BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
