"""``t2ibias label SUITE``: a local page on which a person labels the run's own images, so a
judge's labelled calibration (``judge_calibration: {folder: DIR}``) takes minutes, not a
day of hand-written JSON (issue #45).

What it shows: the images the suite's selected checks draw (the session plan's draws, read
from the cache a run or ``prefetch`` filled; anything absent is generated and cached as the
run would), one (image, axis) question at a time, for the axes whose ``judge_calibration``
names a folder (or every judged axis with ``--out``).

Which image next (the rule): the axis whose least-labelled class is furthest below its need
goes first (that class's confusion row has the widest interval, which shrinks as 1/sqrt(n),
so a label there tightens the correction most); within an axis the images come in a fixed
random order. Not the judge's least sure answers first: labels chosen by the judge's answer
or its certainty are not a fair sample of the images the check reads, and a confusion
measured on them (hard images over-represented) would bias the correction it feeds. The
need per class is ``--per-class`` (default: the most any selected check needs, as
``--t2i-plan`` prints it).

What it writes: ``index.jsonl`` in the folder, one row an image with every axis labelled on
it (``{"file": ..., AXIS: VALUE, ..., "prompt": ...}``; "cannot tell" listed as
``"cannot_tell": [AXIS]``, which no calibration reads), the images copied beside it. Every write rereads the index under a
file lock and replaces it atomically, so a second session (or one started after this one
stopped) resumes where the labels stand and two at once never lose a row.

Keys: a digit (then a letter) per class, ``s`` skip, ``x`` cannot tell, ``u`` or Backspace
undo. The server listens on 127.0.0.1 only; class names, prompts and the suite's name reach
the page as JSON read with ``textContent`` (data, never markup), under a Content Security
Policy that allows the page's own script only; a request naming another host (DNS
rebinding) or a POST that is not JSON (another site's form) is refused.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .store.cache import write_atomically

if TYPE_CHECKING:
    from PIL import Image

    from .suite_spec import AxisSpec

INDEX = "index.jsonl"
CLASS_KEYS = "123456789abcdefghijklmnopqrtvwyz"
"""The key of each class in order (s, u and x are the page's own)."""
SHUFFLE_SEED = 0


@dataclass(frozen=True)
class LabelTask:
    """One question of the page: the true value of ``axis`` on one image."""

    file: str
    """The image's name in the folder: its content hash, so two draws of it are one file."""
    axis: AxisSpec
    prompt: str
    image: Image.Image = field(repr=False, compare=False)


def image_file(content_hash: str) -> str:
    return f"{content_hash[:24]}.png"


class LabelBook:
    """The folder's ``index.jsonl``, reread on every call: another session may write too."""

    def __init__(self, folder: Path) -> None:
        from filelock import FileLock

        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.index = folder / INDEX
        self.lock = FileLock(str(folder / f".{INDEX}.lock"))

    def rows(self) -> list[dict[str, Any]]:
        try:
            lines = self.index.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def answered(self) -> set[tuple[str, str]]:
        """(file, axis) of every row: labelled or "cannot tell"."""
        done = set()
        for row in self.rows():
            for axis in [k for k in row if k not in ("file", "prompt", "cannot_tell")]:
                done.add((row["file"], axis))
            for axis in row.get("cannot_tell") or ():
                done.add((row["file"], axis))
        return done

    def counts(self, axis: AxisSpec) -> dict[str, int]:
        counts = dict.fromkeys(axis.choices, 0)
        for row in self.rows():
            if row.get(axis.name) in counts:
                counts[row[axis.name]] += 1
        return counts

    def add(self, task: LabelTask, value: str | None) -> tuple[str, str]:
        """Copy the image beside the index and record its answer on the image's one row (a
        new row for a new image; ``value`` None: cannot tell). One row an image, whatever
        axes it carries: a calibration by group reads an image's other axes off its row
        (``judge_across_groups``). Returns what ``remove`` takes back."""
        with self.lock:
            if not (self.folder / task.file).is_file():
                buffer = io.BytesIO()
                task.image.save(buffer, format="PNG")
                write_atomically(self.folder / task.file, buffer.getvalue())
            rows = self.rows()
            row = next((r for r in reversed(rows) if r.get("file") == task.file), None)
            if row is None:
                row = {"file": task.file}
                rows.append(row)
            if value is None:
                row["cannot_tell"] = [*row.get("cannot_tell", ()), task.axis.name]
            else:
                row[task.axis.name] = value
            row.setdefault("prompt", task.prompt)
            self._write(rows)
        return task.file, task.axis.name

    def remove(self, answer: tuple[str, str]) -> bool:
        """Take back an answer ``add`` recorded (the row goes when nothing else is on it);
        False when another session took it back already."""
        file, axis = answer
        with self.lock:
            rows = self.rows()
            for i in range(len(rows) - 1, -1, -1):
                row = rows[i]
                if row.get("file") != file:
                    continue
                if axis in (row.get("cannot_tell") or ()):
                    row["cannot_tell"] = [a for a in row["cannot_tell"] if a != axis]
                    if not row["cannot_tell"]:
                        del row["cannot_tell"]
                elif axis in row:
                    del row[axis]
                else:
                    continue
                if not set(row) - {"file", "prompt"}:
                    del rows[i]
                self._write(rows)
                return True
        return False

    def _write(self, rows: Sequence[dict[str, Any]]) -> None:
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        write_atomically(self.index, text.encode("utf-8"))


class LabelSession:
    """The tasks, the book and the order (module doc); what the page's requests call."""

    def __init__(self, title: str, tasks: Sequence[LabelTask], book: LabelBook,
                 needs: dict[str, int]) -> None:
        self.title = title
        self.book = book
        self.needs = needs
        """Labels a class each axis' checks need, by axis name."""
        self.axes = {task.axis.name: task.axis for task in tasks}
        self.tasks: dict[tuple[str, str], LabelTask] = {}
        order = list(tasks)
        random.Random(SHUFFLE_SEED).shuffle(order)  # a fair sample (module doc)
        for task in order:
            self.tasks.setdefault((task.file, task.axis.name), task)
        self.skipped: list[tuple[str, str]] = []
        self.written: list[tuple[str, str]] = []
        """This session's answers (file, axis), newest last: what undo takes back."""

    def progress(self) -> list[dict[str, Any]]:
        return [{"axis": name, "need": self.needs.get(name, 0),
                 "counts": self.book.counts(axis)} for name, axis in self.axes.items()]

    def next_task(self) -> LabelTask | None:
        done = self.book.answered()
        waiting = [key for key in self.tasks if key not in done and key not in self.skipped]
        if not waiting:
            waiting = [key for key in self.skipped if key not in done]
            self.skipped = []
        if not waiting:
            return None

        def shortfall(axis_name: str) -> float:
            counts = self.book.counts(self.axes[axis_name])
            return self.needs.get(axis_name, 0) - min(counts.values())

        axis_name = max(dict.fromkeys(key[1] for key in waiting), key=shortfall)
        return self.tasks[next(key for key in waiting if key[1] == axis_name)]

    def question(self) -> dict[str, Any]:
        task = self.next_task()
        if task is None:
            return {"title": self.title, "done": True, "progress": self.progress()}
        return {"title": self.title, "done": False, "file": task.file, "axis": task.axis.name,
                "question": task.axis.question, "prompt": task.prompt,
                "choices": [{"key": key, "value": value}
                            for key, value in zip(CLASS_KEYS, task.axis.choices)],
                "progress": self.progress()}

    def answer(self, file: str, axis: str, value: str | None) -> None:
        task = self.tasks.get((file, axis))
        if task is None or (value is not None and value not in task.axis.choices):
            raise KeyError(f"no question ({file!r}, {axis!r}) with answer {value!r}")
        self.written.append(self.book.add(task, value))

    def skip(self, file: str, axis: str) -> None:
        self.skipped.append((file, axis))

    def undo(self) -> None:
        while self.written:
            if self.book.remove(self.written.pop()):
                return

    def image_png(self, file: str) -> bytes | None:
        task = next((t for (f, _), t in self.tasks.items() if f == file), None)
        if task is None:
            return None
        buffer = io.BytesIO()
        task.image.save(buffer, format="PNG")
        return buffer.getvalue()


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>t2ibias label</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:52em}
img{width:384px;height:384px;image-rendering:pixelated;border:1px solid #999}
.keys span{display:inline-block;margin:.3em .6em .3em 0;padding:.2em .5em;border:1px solid #888}
kbd{font-weight:bold} .muted{color:#666} progress{width:12em}
</style></head><body>
<h1 id="title"></h1>
<p id="question"></p>
<img id="picture" alt="the image to label">
<p class="muted" id="prompt"></p>
<div class="keys" id="keys"></div>
<p class="muted"><kbd>s</kbd> skip &middot; <kbd>x</kbd> cannot tell &middot;
<kbd>u</kbd> / <kbd>Backspace</kbd> undo</p>
<h2>Labels against what the checks need</h2>
<table id="progress"></table>
<p id="status" class="muted"></p>
<script src="/page.js"></script>
</body></html>
"""

SCRIPT = """"use strict";
let current = null;
function cell(row, text) { const td = document.createElement("td"); td.textContent = text;
  row.appendChild(td); return td; }
function show(q) {
  current = q;
  document.body.dataset.shown = String(Number(document.body.dataset.shown || 0) + 1);
  document.getElementById("title").textContent = "Labelling for " + q.title;
  const keys = document.getElementById("keys"); keys.replaceChildren();
  const table = document.getElementById("progress"); table.replaceChildren();
  for (const axis of q.progress) {
    for (const [value, n] of Object.entries(axis.counts)) {
      const row = document.createElement("tr");
      cell(row, axis.axis); cell(row, value); cell(row, n + " / " + axis.need);
      const bar = document.createElement("progress"); bar.max = Math.max(axis.need, 1);
      bar.value = Math.min(n, bar.max); cell(row, "").appendChild(bar);
      table.appendChild(row);
    }
  }
  const picture = document.getElementById("picture");
  if (q.done) {
    document.getElementById("question").textContent = "Nothing left to label.";
    picture.hidden = true; document.getElementById("prompt").textContent = "";
    document.body.dataset.file = ""; return;
  }
  picture.hidden = false; picture.src = "/image/" + encodeURIComponent(q.file);
  document.body.dataset.file = q.file; document.body.dataset.axis = q.axis;
  document.getElementById("question").textContent = q.axis + ": " + q.question;
  document.getElementById("prompt").textContent = "drawn for \\u201c" + q.prompt +
    "\\u201d \\u00b7 " + q.file;
  for (const choice of q.choices) {
    const span = document.createElement("span"); const key = document.createElement("kbd");
    key.textContent = choice.key; span.appendChild(key);
    span.appendChild(document.createTextNode(" " + choice.value)); keys.appendChild(span);
  }
}
async function load() { show(await (await fetch("/next")).json()); }
async function send(path, body) {
  const reply = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                                   body: JSON.stringify(body || {})});
  document.getElementById("status").textContent = reply.ok ? "" : await reply.text();
  show(await (await fetch("/next")).json());
}
let busy = false;
document.addEventListener("keydown", async (event) => {
  if (busy || !current || event.ctrlKey || event.metaKey || event.altKey) return;
  const key = event.key;
  let action = null;
  if (key === "u" || key === "Backspace") action = ["/undo", {}];
  else if (!current.done && key === "s") action = ["/skip", {file: current.file, axis: current.axis}];
  else if (!current.done && key === "x")
    action = ["/answer", {file: current.file, axis: current.axis, value: null}];
  else if (!current.done) {
    const choice = current.choices.find((c) => c.key === key);
    if (choice) action = ["/answer", {file: current.file, axis: current.axis, value: choice.value}];
  }
  if (!action) return;
  event.preventDefault(); busy = true;
  try { await send(action[0], action[1]); } finally { busy = false; }
});
load();
"""

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; "
                               "img-src 'self'; connect-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


def make_handler(session: LabelSession) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the page is the log
            pass

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in SECURITY_HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, value: Any) -> None:
            self._send(HTTPStatus.OK, json.dumps(value).encode(), "application/json")

        def _ours(self) -> bool:
            """A request for this server by its own address: another site's page that
            rebinds a name to 127.0.0.1 sends its own Host, and is refused."""
            port = self.server.server_port  # type: ignore[attr-defined]  # typeshed: BaseServer; ours is an HTTPServer
            if self.headers.get("Host") in (f"127.0.0.1:{port}", f"localhost:{port}"):
                return True
            self._send(HTTPStatus.FORBIDDEN, b"not this server's address", "text/plain")
            return False

        def do_GET(self) -> None:
            from urllib.parse import unquote

            if not self._ours():
                return
            if self.path == "/":
                self._send(HTTPStatus.OK, PAGE.encode(), "text/html; charset=utf-8")
            elif self.path == "/page.js":
                self._send(HTTPStatus.OK, SCRIPT.encode(), "text/javascript; charset=utf-8")
            elif self.path == "/next":
                self._json(session.question())
            elif self.path.startswith("/image/") and (
                    png := session.image_png(unquote(self.path[len("/image/"):]))) is not None:
                self._send(HTTPStatus.OK, png, "image/png")
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain")

        def do_POST(self) -> None:
            if not self._ours():
                return
            # JSON only: a form on another site cannot send it without the browser asking first
            if self.headers.get("Content-Type") != "application/json":
                self._send(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, b"JSON only", "text/plain")
                return
            try:
                length = min(int(self.headers.get("Content-Length") or 0), 65536)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path == "/answer":
                    session.answer(str(body["file"]), str(body["axis"]), body.get("value"))
                elif self.path == "/skip":
                    session.skip(str(body["file"]), str(body["axis"]))
                elif self.path == "/undo":
                    session.undo()
                else:
                    self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain")
                    return
            except (KeyError, ValueError, TypeError) as error:
                self._send(HTTPStatus.BAD_REQUEST, str(error).encode(), "text/plain")
                return
            self._json({"ok": True})

    return Handler


def serve(session: LabelSession, port: int = 0) -> HTTPServer:
    """The page's server on 127.0.0.1 (``port`` 0: a free one); the caller runs it."""
    return HTTPServer(("127.0.0.1", port), make_handler(session))
