"""The papers' own reported figures, as sections of a check's HTML block, read from the row's
figures by their keys, whatever the kind (the JSON report holds the same numbers): ``paper``,
a table of prompt groups with its λ sweep (BGPS: mean share, Gendered%, perplexity under a
second LM, words; seeds/001 Tables 1-2, App. D); ``negative_is_mit``, the share of mitigation
steps' (mitigated, other axis) pairs made worse (BiasConnect A.5); each bias' ``agreement``,
the judge against a classifier (OpenBias Sec. 4.2: KL, F1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .charts import escape, finite


def _number(value: Any, digits: int = 3) -> str:
    return f"{float(value):.{digits}f}" if isinstance(value, (int, float)) and finite(value) else "—"


def _bgps_row(name: str, row: Mapping[str, Any]) -> str:
    share = row.get("mean_share") or {}
    words = row.get("words") or {}
    naming = row.get("naming_share")
    return (f"<tr><td>{escape(name)}</td><td>{int(row.get('prompts', 0))}</td>"
            f"<td>{_number(share.get('value'))} [{_number(share.get('low'))}, "
            f"{_number(share.get('high'))}]</td>"
            f"<td>{_number(100 * naming if isinstance(naming, (int, float)) else None, 0)}%</td>"
            f"<td>{_number(row.get('mean_perplexity'), 2)}</td>"
            f"<td>{_number(words.get('min'), 0)} to {_number(words.get('max'), 0)}</td></tr>")


def prompt_groups_table(figures: Mapping[str, Any]) -> str:
    """A table of prompt groups as the paper printed it (BGPS): mean target share over each
    group's prompts, Gendered%, perplexity under the evaluation LM and the prompts' words;
    then the λ sweep."""
    paper = figures.get("paper")
    if not isinstance(paper, Mapping) or not isinstance(paper.get("found"), Mapping):
        return ""
    lam = (figures.get("settings") or {}).get("lambda")
    names = {"found": f"BGPS λ={lam:g}" if isinstance(lam, (int, float)) else "BGPS",
             "baseline": "λ=0 (LLM alone)", "curated": "curated"}
    head = ("<tr><th></th><th>prompts</th><th>mean share [CI]</th><th>Gendered</th>"
            "<th>perplexity</th><th>words</th></tr>")
    rows = "".join(_bgps_row(name, paper[key]) for key, name in names.items()
                   if isinstance(paper.get(key), Mapping))
    title = escape(str(figures.get("paper_title", "")))
    out = (f'<div class="paper"><h3>The paper\'s evaluation ({title}) · '
           f'{escape(str(figures.get("target", "")))}</h3><table class="toc">{head}{rows}</table>')
    sweep = paper.get("lambda_sweep")
    if isinstance(sweep, list) and sweep:
        lines = "".join(_bgps_row(f"λ={float(r.get('lambda', 0)):g}", r) for r in sweep
                        if isinstance(r, Mapping))
        out += (f'<h3>λ sweep (App. D): bias against perplexity</h3>'
                f'<table class="toc">{head}{lines}</table>')
    instruction = figures.get("instruction")
    if instruction:
        out += f'<p class="muted small">the LLM was told: {escape(str(instruction))}</p>'
    return out + "</div>"


def negative_is_mit(figures: Mapping[str, Any]) -> str:
    """BiasConnect A.5's figure: the share of (mitigated, other axis) pairs a mitigation step
    made worse (negative IS_mit), with each such pair."""
    negative = figures.get("negative_is_mit")
    if not isinstance(negative, Mapping) or not negative.get("pairs"):
        return ""
    cases = "".join(
        f"<tr><td>{escape(str(c.get('mitigated', '')))}</td><td>{escape(str(c.get('axis', '')))}</td>"
        f"<td>{_number(c.get('value'))} [{_number(c.get('low'))}, {_number(c.get('high'))}]</td></tr>"
        for c in negative.get("cases", []) if isinstance(c, Mapping))
    table = (f'<table class="toc"><tr><th>mitigated</th><th>made worse</th><th>IS_mit [CI]</th>'
             f"</tr>{cases}</table>") if cases else ""
    return (f'<div class="paper"><h3>Negative IS_mit (BiasConnect A.5)</h3><p>'
            f"{int(negative.get('negative', 0))} of {int(negative.get('pairs', 0))} (mitigated, "
            f"other axis) pairs made worse ({_number(100 * float(negative.get('share', 0)), 0)}%), "
            f"{int(negative.get('shown', 0))} shown by their interval; the paper: over 29% "
            f"(SD 1.4, ITI-GEN)</p>{table}</div>")


def classifier_agreement(figures: Mapping[str, Any]) -> str:
    """OpenBias Sec. 4.2's figures: each bias a classifier also read, the KL between the
    classifier's and the judge's class shares and the judge's F1 and accuracy against it."""
    biases = [b for b in figures.get("biases") or () if isinstance(b, Mapping)
              and isinstance(b.get("agreement"), Mapping)]
    if not biases:
        return ""
    lines = []
    for b in biases:
        a = b["agreement"]
        if "error" in a:
            lines.append(f"<tr><td>{escape(str(b.get('name', '')))}</td>"
                         f"<td colspan=4>{escape(str(a['error']))}</td></tr>")
        else:
            lines.append(f"<tr><td>{escape(str(b.get('name', '')))}</td><td>{int(a.get('n', 0))}</td>"
                         f"<td>{_number(a.get('kl'))}</td><td>{_number(a.get('f1'), 2)}</td>"
                         f"<td>{_number(a.get('accuracy'), 2)}</td></tr>")
    return ('<div class="paper"><h3>Judge against the classifier (OpenBias Sec. 4.2)</h3>'
            '<table class="toc"><tr><th>bias</th><th>images</th><th>KL</th><th>F1</th>'
            f'<th>accuracy</th></tr>{"".join(lines)}</table></div>')


SECTIONS = (prompt_groups_table, negative_is_mit, classifier_agreement)
"""Each section reads its own figure keys and gives "" when the row has none."""


def paper_sections(figures: Mapping[str, Any]) -> list[str]:
    """The HTML sections of a row's paper figures."""
    return [html for html in (section(figures) for section in SECTIONS) if html]
