"""The HTML report: a page built from report rows and the cached images, read back as a DOM
(header, contents linking to failures first, each cached image inlined once, SVG bars and
whiskers, heatmaps on one shared scale), rebuilt from a saved JSON report, and drawn by
headless Chromium into a screenshot that is not blank."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image
from support.report_rows import gallery_figures, image_key, sample_rows

from pytest_t2ibias.reports.heatmap import NEGATIVE, POSITIVE, diverging_colour
from pytest_t2ibias.reports.html import render_html, write_html
from pytest_t2ibias.reports.rows import ReportRow, read_json, write_json

RUN = {"plugin_version": "9.9.9", "git_revision": "abc123", "date": "2026-01-02T03:04:05+00:00",
       "models": [{"role": "generator:candidate", "model": "fixtures/toy-sd",
                   "fingerprint": "f" * 64}],
       "judges": [{"role": "vqa", "model": "fixtures/toy-clip", "fingerprint": "e" * 64}],
       "settings": {"confidence": 0.95, "seed": None, "classifiers": {"age": "c/age"}}}
COLOURS = [(200, 40, 40), (40, 160, 60), (40, 80, 200), (230, 200, 40), (120, 60, 160)]


@pytest.fixture
def cache(tmp_path) -> Path:
    """A cache directory holding images 0..4 (small, as the toy world's) and 5 (large)."""
    root = tmp_path / "cache"
    for i, colour in enumerate(COLOURS):
        path = root / "images" / image_key(i)[:2] / f"{image_key(i)}.png"
        path.parent.mkdir(parents=True)
        image = Image.new("RGB", (32, 32), colour)
        image.paste((255, 255, 255), (8, 8, 24, 24))
        image.save(path)
    big = root / "images" / image_key(5)[:2] / f"{image_key(5)}.png"
    big.parent.mkdir(parents=True)
    Image.new("RGB", (512, 512), (10, 120, 120)).save(big)
    return root










class Page(HTMLParser):
    """Start tags with their attributes, the text, and the text inside <h1>/<a>."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.links: list[tuple[str, str]] = []
        self._open: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "a":
            self.links.append((dict(attrs).get("href") or "", ""))

    def handle_data(self, data):
        self.text.append(data)
        if self.links and self.tags and self.tags[-1][0] == "a":
            href, text = self.links[-1]
            self.links[-1] = (href, text + data)

    def all(self, tag: str, css: str | None = None) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag
                and (css is None or css in (a.get("class") or "").split())]


def test_the_page_has_header_contents_failures_first_images_and_charts(cache):
    page_text = render_html(sample_rows(), run=RUN, cache_dir=cache)
    page = Page(page_text)
    shown = "".join(page.text)
    # header: version, date, models and judges with fingerprints, settings, the tally
    assert "t2ibias report" in shown and "pytest-t2ibias 9.9.9" in shown
    assert "2026-01-02T03:04:05+00:00" in shown and "f" * 64 in shown and "e" * 64 in shown
    assert "fixtures/toy-clip" in shown and "age: c/age" in shown
    assert "5 results" in shown and "1 failed" in shown and "1 expected failure" in shown
    # contents: every check linked, failures and errors first, then the expected failure
    toc = [(href, text) for href, text in page.links if re.fullmatch(r"#c\d+", href)]
    assert [text for _, text in toc] == ["gender_balance", "broken", "spillover_a",
                                         "balanced_control", "spillover_b"]
    sections = {a["id"] for a in page.all("section") if a.get("id")}
    assert {href[1:] for href, _ in toc} <= sections
    assert "expected failure" in shown and "ERROR" in shown and "FAIL" in shown
    assert "normalised W1 0.700 exceeds 0.350" in shown and "BackendError: no model" in shown
    # the grid: a tile per cached image (drawing it from the page's one copy), a placeholder
    # for the missing one, marks
    tiles = page.all("svg", "thumb")
    assert len(tiles) == 4
    assert [a["aria-label"] for a in tiles] == ["male", "male", "filtered", "abstained"]
    images = page.all("image")
    assert len(images) == 4 and all((a["href"] or "").startswith("data:image/") for a in images)
    assert page_text.count('class="missing"') == 1
    assert len(page.all("figure", "filtered")) == 1 and len(page.all("figure", "abstained")) == 1
    assert sum((a["href"] or "").startswith("data:image/jpeg") for a in images) == 1  # 512 px
    # the bars: one per choice, a Wilson whisker each, the ideal at 50%
    assert len(page.all("rect", "bar")) == 2
    ideals = page.all("line", "ideal")
    assert len(ideals) == 2 and len({a["x1"] for a in ideals}) == 1
    bar_widths = sorted(float(a["width"]) for a in page.all("rect", "bar"))
    assert bar_widths[1] / bar_widths[0] == pytest.approx(40 / 8, rel=0.01)
    assert "2 filtered out" in shown and "1 abstained" in shown
    # interval charts: a whisker for each judged figure
    assert len(page.all("svg", "chart")) >= 5


def test_heatmaps_share_one_colour_scale(cache):
    page = Page(render_html(sample_rows(), run=RUN, cache_dir=cache))
    cells = [a["style"] for a in page.all("td") if "background:rgb" in (a.get("style") or "")]
    as_rgb = lambda c: "rgb({},{},{})".format(*c)
    # the report's largest spillover |IS| is 0.8 (the diagonal's 0.95 does not count): that
    # cell is full red, and -0.2 is not, whatever its own matrix's largest value
    assert sum(as_rgb(NEGATIVE) in style for style in cells) == 1  # per-matrix scales: 2
    assert sum(as_rgb(diverging_colour(-0.2, 0.8)) in style for style in cells) == 1
    assert "-0.80 worse" in "".join(page.text)
    assert sum(as_rgb(POSITIVE) in style for style in cells) == 2  # the diagonals, clipped


def test_a_saved_json_report_and_its_cache_give_the_same_page(cache, tmp_path):
    rows = sample_rows()
    saved = tmp_path / "run.json"
    write_json(saved, rows, {"images_generated": 0}, RUN)
    again, run = read_json(saved)
    assert run == RUN
    assert [row.to_json() for row in again] == [row.to_json() for row in rows]
    assert render_html(again, run=run, cache_dir=cache) == render_html(rows, run=RUN,
                                                                       cache_dir=cache)


def test_no_cache_dir_or_a_hostile_key_gives_placeholders(tmp_path, cache):
    secret = tmp_path / "secret.png"
    Image.new("RGB", (8, 8), "red").save(secret)
    rows = sample_rows()
    gallery = gallery_figures()
    gallery["groups"][0]["images"][0]["key"] = str(Path("..") / ".." / secret)
    rows[2] = ReportRow(**{**rows[2].to_dict(), "figures": {**rows[2].figures,
                                                            "gallery": gallery}})
    page = Page(render_html(rows, cache_dir=cache))
    assert len(page.all("image")) == 3  # the hostile key is never read as a path
    bare = Page(render_html(rows))
    assert bare.all("image") == [] and bare.all("svg", "thumb") == []
    assert "placeholders" in "".join(bare.text)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (Debian: "
                    "apt-get install chromium; .ci/run installs it)")
def test_headless_chromium_draws_the_report(cache, tmp_path):
    page, shot = tmp_path / "report.html", tmp_path / "shot.png"
    write_html(page, sample_rows(), run=RUN, cache_dir=cache)
    done = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1400,2600", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    assert shot.exists(), done.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == (1400, 2600)
        rgb = image.convert("RGB")
    colours = rgb.getcolors(maxcolors=1 << 20)
    assert len(colours) > 200  # text, badges, charts and thumbnails, not a blank page
    # the thumbnails were drawn: their colours fill more than a few pixels of the shot
    drawn = {colour: count for count, colour in colours}
    assert drawn.get(COLOURS[0], 0) > 500 and drawn.get(COLOURS[1], 0) > 500
    assert max(drawn.values()) < 0.9 * rgb.size[0] * rgb.size[1]


def test_a_file_that_is_not_a_json_report_is_named(tmp_path):
    broken, other = tmp_path / "broken.json", tmp_path / "other.json"
    broken.write_text("{not json")
    other.write_text('{"results": []}')
    for path in (broken, other, tmp_path / "missing.json"):
        with pytest.raises(ValueError, match=re.escape(str(path))):
            read_json(path)


def test_an_image_two_checks_show_is_inlined_once(cache):
    """Issue #43: the example run inlined 48 images 104 times; each distinct image is one
    data URI now, every tile that shows it a reference to it."""
    rows = sample_rows()
    shown_twice = [i for i, row in enumerate(rows) if row.figures.get("gallery")]
    assert shown_twice
    again = ReportRow(**{**rows[shown_twice[0]].to_dict(), "nodeid": "s.t2i.yaml::again[x]",
                         "check_id": "again"})
    page_text = render_html([*rows, again], run=RUN, cache_dir=cache)
    page = Page(page_text)
    images = page.all("image")
    uses = [a["href"] for t, a in page.tags if t == "use"]
    assert page_text.count("data:image/") == len(images) == 4  # the 4 cached images, once
    assert len(uses) == 8 and set(uses) == {f"#{a['id']}" for a in images}
