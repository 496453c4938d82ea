"""Reports render user text as text: hostile subjects neither run, hide nor break anything."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from pytest_t2ibias.reports.html import write_html
from pytest_t2ibias.reports.rows import ReportRow, write_json
from pytest_t2ibias.reports.terminal import render_text

HOSTILE_SUBJECTS = (
    "[link=javascript:alert(document.domain)]click me[/link]",
    "[/]",
    "[bold red]FAKE PASS[/]",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "\x1b[2J\x1b[31mcleared",
)


def _row(subject: str, passed: bool = False) -> ReportRow:
    return ReportRow(nodeid=f"s.t2i.yaml::c[{subject}-gender]", check="c", subject=subject,
                     axis="gender", value=0.7, low=0.6, high=0.8, n=12, confidence=0.95,
                     threshold=0.5, figures={}, outcome="pass" if passed else "fail")


class _Page(HTMLParser):
    """Every start tag with its attributes, and the text between tags."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@pytest.mark.parametrize("subject", HOSTILE_SUBJECTS)
def test_terminal_table_shows_the_subject_literally(subject):
    text = render_text([_row(subject)], width=200, color=True)
    assert "FAIL" in text
    if "\x1b" not in subject:  # the column cuts long names at 22 characters, never restyles them
        assert subject[:15] in render_text([_row(subject)], width=200, color=False)
    assert "\x1b[2J" not in text  # control characters are shown, not sent


def test_json_keeps_subjects_verbatim(tmp_path):
    path = tmp_path / "report.json"
    write_json(path, [_row(subject) for subject in HOSTILE_SUBJECTS], {"images_generated": 0})
    saved = json.loads(path.read_text())
    assert [check["subject"] for check in saved["checks"]] == list(HOSTILE_SUBJECTS)


def test_html_has_no_live_markup_from_user_text(tmp_path):
    """Subjects, check ids, prompts, answers, axes, messages and model names are all text."""
    path = tmp_path / "report.html"
    rows = [_row(subject) for subject in HOSTILE_SUBJECTS]
    rows.append(_row("plain", passed=True))
    hostile = HOSTILE_SUBJECTS
    rows.append(ReportRow(**{**_row("<b>matrix</b>").to_dict(),
                             "check_id": hostile[0], "message": hostile[3], "reason": hostile[4],
                             "figures": {"matrix": _matrix(hostile[3]), "gallery": _gallery(),
                                         "distribution": _distribution(),
                                         "ideal": {hostile[4]: 0.5, hostile[3]: 0.5},
                                         "pairs": {hostile[2]: {"value": 0.1, "low": 0.0,
                                                                "high": 0.2}}}}))
    run = {"plugin_version": hostile[3], "date": hostile[4],
           "models": [{"role": hostile[0], "model": hostile[3], "fingerprint": hostile[4]}],
           "judges": [{"role": "vqa", "model": hostile[4], "fingerprint": hostile[2]}],
           "settings": {hostile[3]: hostile[4], "classifiers": {hostile[4]: hostile[3]}}}
    write_html(path, rows, run=run, cache_dir=tmp_path)
    page = _Page()
    page.feed(path.read_text())
    for tag, attrs in page.tags:
        assert tag not in ("script", "bold", "link", "iframe"), (tag, attrs)
        if tag == "a":  # the report's own links, to its own sections
            assert re.fullmatch(r"#(c\d+|checks)", attrs.get("href") or ""), attrs
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        for value in attrs.values():
            assert "javascript:" not in (value or "").lower(), (tag, attrs)
    img_sources = [attrs.get("src") for tag, attrs in page.tags if tag == "img"]
    assert img_sources == []  # no image of a hostile key, nor the hostile 'x'
    shown = "".join(page.text)
    for subject in HOSTILE_SUBJECTS[:5]:
        assert subject in shown
    assert "FAKE PASS" in shown and "FAIL" in shown
    assert "<b>matrix</b>" in shown  # a subject's tag is characters, not bold
    assert shown.count(hostile[3]) >= 6  # message, model, version, settings, prompt, axis ...


def _gallery():
    images = [{"key": HOSTILE_SUBJECTS[4], "labels": [HOSTILE_SUBJECTS[3]],
               "mark": HOSTILE_SUBJECTS[4]}]
    return {"axes": [HOSTILE_SUBJECTS[3]], "per_prompt": HOSTILE_SUBJECTS[4], "prompts": 1,
            "groups": [{"prompt": HOSTILE_SUBJECTS[3], "role": HOSTILE_SUBJECTS[4],
                        "n": HOSTILE_SUBJECTS[0], "images": images}]}


def _distribution():
    choices = [HOSTILE_SUBJECTS[4], HOSTILE_SUBJECTS[3]]
    return {"choices": choices, "counts": {c: 3 for c in choices},
            "shares": {c: 0.5 for c in choices}, "n": 6, "abstentions": 0, "filtered": 0}


def _matrix(axis: str = "age"):
    return {"axes": ["gender", axis], "value": [[None, 0.1], [-0.2, None]],
            "low": [[None, 0.0], [-0.3, None]], "high": [[None, 0.2], [-0.1, None]]}
