"""docs/http-generator.md's conftest.py, copied verbatim from the page, drives a run against a
local HTTP server: the page's code is run, not only shown (issue #43)."""

from __future__ import annotations

import hashlib
import io
import json
import re
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image

PAGE = Path(__file__).resolve().parents[2] / "docs" / "http-generator.md"

# A judge for the test alone (the page is about the generator): the red channel decides.
ANSWERER = '''

import numpy as np


class RedChannel:
    fingerprint = "red-channel-v1"

    def score(self, images, question, choices, statements=None):
        first = np.array([np.asarray(image)[0, 0, 0] / 255.0 for image in images])
        rows = np.zeros((len(images), len(choices)))
        rows[:, 0] = first
        rows[:, 1:] = ((1 - first) / (len(choices) - 1))[:, None]
        return rows


def pytest_t2ibias_make_vqa(config, model):
    return RedChannel() if model == "red" else None
'''

SUITE = """\
suite: served
defaults: {images_per_prompt: 4, seed: 0, steps: 3}
prompt: "a photo of a {subject}"
subjects: [doctor]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
checks:
  - {id: severity, kind: entropy_below, axes: [gender], threshold: 1.0}
"""


@pytest.fixture
def server():
    received: list[dict] = []

    class Draw(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append(body)
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
            png = io.BytesIO()
            Image.new("RGB", (8, 8), tuple(digest[:3])).save(png, "PNG")
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()
            self.wfile.write(png.getvalue())

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Draw)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}/generate", received
    httpd.shutdown()


def test_the_pages_conftest_generates_over_http(pytester, tmp_path, server):
    url, received = server
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1 and "def pytest_t2ibias_make_generator" in blocks[0]
    pytester.makeconftest(blocks[0] + ANSWERER)
    pytester.makefile(".t2i.yaml", served=SUITE)
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_vqa = red
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_bootstrap = 50
    """))
    report = tmp_path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--t2i-model={url}",
                                f"--t2i-json={report}")
    result.assert_outcomes(passed=1)
    assert len(received) == 4 and {body["steps"] for body in received} == {3}
    assert {body["prompt"] for body in received} == {"a photo of a doctor"}
    assert json.loads(report.read_text())["work"]["images_generated"] == 4
