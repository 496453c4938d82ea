"""The papers' own figures as HTML tables: each kind's ``CheckKind.tables`` (BGPS' evaluation
and λ sweep, OpenBias' agreement with a classifier, BiasConnect A.5's negative IS_mit) drawn
the same way, every cell escaped (text from a suite or a model is data, never markup)."""

from __future__ import annotations

from collections.abc import Sequence

from ..figures import Table
from .charts import escape


def table_html(table: Table) -> str:
    """One table: its title, header, rows and a note below it."""
    head = "".join(f"<th>{escape(cell)}</th>" for cell in table.header)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>"
                   for row in table.rows)
    note = f'<p class="muted small">{escape(table.note)}</p>' if table.note else ""
    return (f'<div class="paper"><h3>{escape(table.title)}</h3>'
            f'<table class="toc"><tr>{head}</tr>{body}</table>{note}</div>')


def paper_sections(tables: Sequence[Table]) -> list[str]:
    """The HTML of a row's tables."""
    return [table_html(t) for t in tables]
