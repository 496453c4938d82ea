"""The terminal's reports: the summary table and the plan table, drawn with rich (the JSON
is ``rows``, the HTML page for people ``html``, both built on the same rows).

Subjects, prompts and check ids come from suites and tests that may be hostile, so user text
enters rich only as ``Text`` (never markup: ``[link=javascript:...]`` must stay characters)
and the HTML only escaped.
"""

from __future__ import annotations

import io
import math
import posixpath
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._text import shown
from .._types import three_places
from .rows import AS_READ_LEGEND, ReportRow, as_read_of, limit_text, n_text

if TYPE_CHECKING:  # rich loads when a report is drawn, not with the plugin (issue #14)
    from pathlib import Path

    from rich.table import Table
    from rich.text import Text



def _fmt(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else three_places(x)


def plain_text(value: Any) -> Text:
    """User text as a rich cell, its brackets kept as characters; control characters (an
    escape sequence in a subject could rewrite the terminal) shown as ``\\x1b``."""
    from rich.text import Text

    return Text(shown(value))


def summary_table(rows: Sequence[ReportRow], *, with_suite: bool | None = None,
                  title: str = "t2ibias: bias checks") -> Table:
    """One line per judged figure, named by suite, check and subject / axis (two suites may
    hold a check of the same id; ``with_suite`` None: a suite column when there are several)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=None,
                  padding=(0, 1, 0, 0), header_style="bold underline")
    # Names wrap only when a width forces it (a terminal); numbers never do, and a verdict
    # wraps between its words rather than being cut to its first letter.
    suites = suite_names(rows)
    if with_suite is None:
        with_suite = len(set(suites.values())) > 1
    if with_suite:
        table.add_column("suite", overflow="fold", min_width=8)
    # issue #44: which protocol made a row, in a column when the rows mix them (else the
    # legend says it once); the judge's reading beside a corrected value, when one was
    with_protocol = len({row.protocol for row in rows}) > 1
    with_as_read = any(as_read_of(row) is not None for row in rows)
    if with_protocol:
        table.add_column("protocol", no_wrap=True)
    table.add_column("check", overflow="fold", min_width=8)
    table.add_column("subject / axis", overflow="fold", min_width=8)
    for numeric in ("value", *(("as read",) if with_as_read else ()), "CI", "n", "limit", "margin"):
        table.add_column(numeric, justify="right", no_wrap=True)
    table.add_column("verdict", overflow="fold", min_width=len("inconclusive:"))
    for row in rows:
        lead = [plain_text(suites[row.nodeid])] if with_suite else []
        lead += [plain_text(row.protocol)] if with_protocol else []
        where = _subject_cell(row)
        if row.status == "error":
            table.add_row(*lead, plain_text(row.check_id or row.check), plain_text(where),
                          *[""] * (6 if with_as_read else 5),
                          _verdict_cell(row, row.reason.split(":")[0]))
            continue
        margin = "" if row.margin is None else f"{row.margin:+.3f}"
        as_read = as_read_of(row)
        read = [_fmt(as_read) if as_read is not None else ""] if with_as_read else []
        table.add_row(*lead, plain_text(row.check_id or row.check), plain_text(where),
                      _fmt(row.value), *read, f"{_fmt(row.low)}–{_fmt(row.high)}", n_text(row),
                      limit_text(row), margin, _verdict_cell(row, _short_reason(row.reason)))
    return table


def summary_legend(rows: Sequence[ReportRow]) -> list[str]:
    """What the table's columns and words mean, as far as its rows use them: one paragraph
    each, wrapped by ``_render`` to the table's width (a rich caption is centred and cut)."""
    judged = [row for row in rows if row.status != "error"] or list(rows)
    levels = sorted({f"{row.confidence * 100:g}%" for row in judged
                     if row.confidence == row.confidence})
    methods = sorted({str(row.figures.get("value", {}).get("method", "")) for row in rows} - {""})
    legend = []
    if levels:
        legend.append(f"CI: {', '.join(levels)}" + (f" ({', '.join(methods)})" if methods else ""))
    protocols = sorted({row.protocol for row in rows})
    if len(protocols) == 1 and protocols != ["gate"]:  # the default's rows need no line
        legend.append(f"protocol: {protocols[0]} (every row; docs/paper-departures.md)")
    if any(as_read_of(row) is not None for row in rows):
        legend.append(AS_READ_LEGEND)
    if any(row.drawn != row.n for row in rows):
        legend.append("n: images judged / drawn (a filter question or the judge dropped the rest)")
    if any(row.figures.get("unread_prompts") for row in rows):
        legend.append("unread words: the generator's tokenizer cannot read the prompt whole "
                      "(unknown words or cut): inconclusive for the suite's own prompts, "
                      "flagged for prompts a search or an LLM chose")
    return legend


def suite_names(rows: Sequence[ReportRow]) -> dict[str, str]:
    """Each row's suite file (its nodeid before ``::``), without the directory all share:
    what tells two checks of the same id apart in a short cell."""
    files = {row.nodeid: row.nodeid.split("::", 1)[0] for row in rows}
    shared = posixpath.commonpath(list(files.values())) if files else ""
    if shared in files.values():  # one file: its name, not an empty cell
        shared = posixpath.dirname(shared)
    return {nodeid: posixpath.relpath(path, shared) if shared else path
            for nodeid, path in files.items()}


def _subject_cell(row: ReportRow) -> str:
    """Subject / what the figure is about; a Python test, whose subject is its own name
    (already in the check column), shows its helper's label or kind, so a test that judged
    two figures has two distinct rows."""
    about = row.about or row.axis
    if row.subject and row.subject == row.check_id:
        return about or row.check
    return " / ".join(part for part in (row.subject, about) if part)


def table_width(terminal_width: int, *, is_terminal: bool, given: int | None) -> int | None:
    """The width tables are drawn at: ``--t2i-table-width``, else the terminal's, else None
    (a file or CI log: as wide as the rows need, so no name or verdict is split)."""
    if given:
        return given
    return terminal_width if is_terminal else None


def _short_reason(reason: str) -> str:
    """The table's word for why a check failed (the JSON has the whole reason)."""
    for word, short in (("alert", "alert"), ("inconclusive", "undecided"), ("beyond", "limit")):
        if reason.startswith(word):
            return short
    return reason


def _verdict_cell(row: ReportRow, why: str = "") -> Text:
    """pass, FAIL, xfail (expected: not red), XPASS, ERROR, then why it failed; an
    interval across the limit says so (what it came to under the burden is pass or FAIL)."""
    cell = _verdict_word(row)
    if row.figures.get("unread_prompts"):  # the model never read a word it was judged on
        cell.append(" unread words", style="bold yellow")
    elif why and not cell.plain.startswith("inconclusive"):  # the word already says why
        cell.append(" " + why, style="dim")
    return cell


def _verdict_word(row: ReportRow) -> Text:
    from rich.text import Text

    status = row.status
    if status == "error":
        return Text("ERROR", style="bold red")
    if status == "xfailed":
        return Text("xfail", style="yellow")
    if status == "xpassed":
        return Text("XPASS", style="bold yellow")
    if row.outcome == "inconclusive" or row.figures.get("outcome") == "inconclusive":
        text = "inconclusive: " + ("pass" if row.passed else "FAIL")
        return Text(text, style="yellow" if row.passed else "bold yellow")
    return Text("pass", style="green") if row.passed else Text("FAIL", style="bold red")


def plan_table(plans: Sequence[Any], power: float,
               unread: dict[str, str] | None = None) -> Table:
    """``--t2i-plan``: per item, images a prompt, prompts, images, and what deciding needs;
    ``unread``: nodeid -> the words its generator cannot read (the check will be inconclusive)."""
    unread = unread or {}
    from rich.table import Table
    from rich.text import Text

    table = Table(title="t2ibias: plan", title_justify="left", box=None,
                  padding=(0, 1, 0, 0), header_style="bold underline")
    table.add_column("item", overflow="fold")
    for numeric in ("n", "prompts", "images", f"n for {power:.0%}"):
        table.add_column(numeric, justify="right", no_wrap=True)
    table.add_column("note", overflow="fold")
    for plan in plans:
        needed = "-" if plan.needed is None else str(plan.needed)
        table.add_row(plain_text(plan.nodeid.rsplit("/", 1)[-1]), str(plan.images_per_prompt),
                      "?" if plan.prompts is None else str(plan.prompts),
                      "?" if plan.images is None else str(plan.images),
                      Text(needed, style="bold yellow" if plan.underpowered else ""),
                      _plan_note(plan, unread.get(plan.nodeid, "")))
    return table


def plan_legend(plans: Sequence[Any], power: float) -> list[str]:
    known = [p.images for p in plans if p.images is not None]
    return [f"{sum(known)} images in {len(known)} items with a known count (before the cache; "
            f"prompts shared between checks are generated once)",
            f"items underpowered near their limit: {sum(p.underpowered for p in plans)} (n for "
            f"{power:.0%} above n: a truth within the check's margin of its limit may go "
            f"undecided)"]


def _plan_note(plan: Any, unread: str) -> Text:
    note = plain_text(plan.note)
    if unread:
        note.append(("; " if plan.note else "") + "unread words: ", style="bold yellow")
        note.append_text(plain_text(unread))
    return note


def unread_in_plan(planned: Sequence[tuple[str, Any]], memo: Path | None = None, *,
                   works: Sequence[Any] | None = None) -> dict[str, str]:
    """nodeid -> what its generator's tokenizer cannot read of its prompts, for the plan
    (tokenizers read from each model's folder, through the readings kept in ``memo``; no
    weights loaded). A tokenizer that cannot be read is said too, on each item it would read:
    the plan hides no failure."""
    from ..backends.readings import pipeline_readers, problems
    from ..kinds import work_of

    readers: dict[str, list[Any]] = {}
    unreadable: dict[str, str] = {}
    """model -> why its tokenizers cannot be read: said on every item that draws from it."""
    found = {}
    for position, (nodeid, check) in enumerate(planned):
        said: list[str] = []
        work = works[position] if works is not None else work_of(check)
        if work.error is not None:  # plan_prompts says it; the run reports it
            continue
        needs: dict[str, list[str]] = {}
        for draw in work.deciding:  # the prompts whose unread words decide (issue #47)
            if draw.role is not None:
                needs.setdefault(draw.role, []).append(draw.prompt)
        for role, prompts in needs.items():
            model = check.plan.model(role)
            if model not in unreadable:
                try:
                    if model not in readers:
                        readers[model] = pipeline_readers(model, memo)
                    said += problems(readers[model], prompts).values()
                    continue
                except Exception as error:  # any tokenizer's failure, said on the plan
                    unreadable[model] = (f"the {role}'s tokenizer ({model}) cannot be read: "
                                         f"{type(error).__name__}: {error}")
            said.append(unreadable[model])
        if said:
            found[nodeid] = "; ".join(dict.fromkeys(said))
    return found


def plan_prompts(planned: Sequence[tuple[str, Any]], *,
                 works: Sequence[Any] | None = None) -> list[str]:
    """``--t2i-plan -v``: every prompt each item will draw as far as the plan knows, with its
    images (prompts are the user's text, shown as data); ``works``: each item's, when the
    session plan has them."""
    from ..kinds import work_of

    lines = []
    for position, (nodeid, item) in enumerate(planned):
        work = works[position] if works is not None else work_of(item)
        name = shown(nodeid.rsplit("/", 1)[-1])
        if work.error is not None:  # e.g. LLM-phrased axes before their lock: the run says
            lines.append(f"{name}: prompts not known yet ({shown(str(work.error))})")
            continue
        listed = work.prompts()
        if listed is None:
            lines.append(f"{name}: prompts decided as it runs (a search)")
            continue
        lines.append(f"{name}: {len(listed)} prompts")
        lines += [f"  {n:>4} x {shown(prompt)}" + ("" if role == "candidate" else f" ({role})")
                  for role, prompt, n in listed]
    return lines


def render_plan(plans: Sequence[Any], power: float, width: int | None, *, color: bool,
                unread: dict[str, str] | None = None) -> str:
    """The plan table as text; ``width`` None: as wide as its rows (``table_width``)."""
    if not plans:  # an empty table draws its header alone, its legend centred under nothing
        return "t2ibias: plan: no item to plan\n"
    return _render([plan_table(plans, power, unread)], plan_legend(plans, power), width, color=color)


def render_text(rows: Sequence[ReportRow], width: int | None, *, color: bool) -> str:
    """The summary table as text (pytest owns the writer); ``width`` None: as wide as its
    rows, for a file or a CI log (``table_width``). Too wide for ``width`` with several
    suites, it is one table a suite under the suite's name, which frees the suite column."""
    tables = [summary_table(rows)]
    suites = suite_names(rows)
    if width is not None and len(set(suites.values())) > 1 and _natural_width(tables[0]) > width:
        by_suite: dict[str, list[ReportRow]] = {}
        for row in rows:
            by_suite.setdefault(suites[row.nodeid], []).append(row)
        tables = [summary_table(group, with_suite=False,
                                title=f"t2ibias: bias checks in {name}" if i == 0 else name)
                  for i, (name, group) in enumerate(by_suite.items())]
    if trade := tradeoff_table(rows):
        tables.append(trade)
    return _render(tables, summary_legend(rows), width, color=color)


def tradeoff_table(rows: Sequence[ReportRow]) -> Table | None:
    """Each subject's bias figures beside what they cost (``reports.tradeoff``), one line a
    subject; None when no suite holds both."""
    from rich.table import Table
    from rich.text import Text

    from .tradeoff import figure_line, tradeoffs

    found = tradeoffs(rows)
    if not found:
        return None
    suites = suite_names(rows)
    several = len({t.suite for t in found}) > 1
    table = Table(title="t2ibias: what each fix cost, beside its bias figures",
                  title_justify="left", box=None, padding=(0, 2, 0, 0),
                  header_style="bold underline")
    if several:
        table.add_column("suite", overflow="fold")
    table.add_column("subject", overflow="fold")
    table.add_column("bias", overflow="fold")
    table.add_column("cost", overflow="fold")
    for trade in found:
        suite = [plain_text(suites[trade.bias[0].nodeid])] if several else []
        table.add_row(*suite, plain_text(trade.subject),
                      Text("\n").join(plain_text(figure_line(r)) for r in trade.bias),
                      Text("\n").join(plain_text(figure_line(r)) for r in trade.cost))
    return table


_UNBOUNDED = 10_000
"""Wide enough for any row: rich then draws a table at its natural width."""


def _natural_width(table: Table) -> int:
    from rich.console import Console

    return Console(width=_UNBOUNDED).measure(table).maximum


def _render(tables: Sequence[Table], legend: Sequence[str], width: int | None, *,
            color: bool) -> str:
    """Tables then their legend, one paragraph a line (wrapped at ``width`` with a hanging
    indent, so a continuation never lands mid-screen); rich pads every line to the table's
    width, and a log keeps no trailing blanks."""
    import textwrap

    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=width or _UNBOUNDED, force_terminal=color,
                      color_system="standard" if color else None)
    for table in tables:
        if width is None:  # nothing may fold: the cells' own widths, not a terminal's
            for column in table.columns:
                column.no_wrap = True
        console.print(table)
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    for paragraph in legend:
        lines += textwrap.wrap(paragraph, width, subsequent_indent="  ") if width else [paragraph]
    return "".join(line + "\n" for line in lines)


def write_summary(terminalreporter: Any, rows: Sequence[ReportRow], work: dict[str, int], *,
                  audit: bool, quiet: bool, family: str, width: int | None) -> None:
    """The ``t2ibias summary`` section through pytest's writer: the table (``width`` None: as
    wide as its rows, for a file or a CI log), the tally, the family line and the work
    counted; under -q the tally and the work on one line."""
    from .rows import one_line

    made = "audited" if audit else "generated"  # a folder audit reads images
    work_line = ("work: {images_generated} images " + made + ", {images_from_cache} from "
                 "cache; {answers_scored} answers scored, {answers_from_cache} from cache"
                 ).format(**work) if work else ""
    from .gating import run_warnings

    warnings = run_warnings(rows)
    if quiet:
        terminalreporter.write_line(one_line(rows) + (f"; {work_line}" if work_line else ""))
        for warning in warnings:
            terminalreporter.write_line(warning, yellow=True, bold=True)
        return
    terminalreporter.section("t2ibias summary")
    terminalreporter.write(render_text(rows, width, color=terminalreporter.hasmarkup))
    terminalreporter.write_line(one_line(rows))
    for warning in warnings:
        terminalreporter.write_line(warning, yellow=True, bold=True)
    terminalreporter.write_line(family)
    if work_line:
        terminalreporter.write_line(work_line)
