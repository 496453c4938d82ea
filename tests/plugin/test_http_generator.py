"""The backend contract, tested the way docs/ARCHITECTURE.md shows it: a model served over HTTP.

A local server (``http.server`` on 127.0.0.1, in a thread) draws images; a root-level
``conftest.py`` hook returns a generator that posts every ``ImageRequest`` -- prompt, seed,
index and the plan's sampling -- to it. Changing the suite's steps regenerates the images
instead of serving the old ones from the cache; a hook object that breaks the contract is one
paragraph naming the hook and what is missing.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_t2ibias.plan import declared_sampling, plan_for

# The conftest.py of docs/ARCHITECTURE.md ("A model served over HTTP"), plus a toy server
# and a toy answerer so the test needs no model at all.
CONFTEST = '''
import hashlib
import io
import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from PIL import Image

class DrawHandler(BaseHTTPRequestHandler):
    """The "model": a PNG whose colour depends on prompt, noise seed and steps."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open("served.jsonl", "a") as log:  # for the test to count what was drawn
            log.write(json.dumps(body) + "\\n")
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
        png = io.BytesIO()
        Image.new("RGB", (8, 8), tuple(digest[:3])).save(png, "PNG")
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        self.wfile.write(png.getvalue())

    def log_message(self, *args):
        pass


class HttpGenerator:
    """A Generator (pytest_t2ibias.backends.Generator): fingerprint + generate(requests)."""

    def __init__(self, url, model):
        self.url = url
        self.fingerprint = f"http:{model}"  # what the server's weights are; sampling is per request

    def generate(self, requests):
        images = []
        for request in requests:
            payload = {"prompt": request.prompt, "seed": request.noise_seed, **request.sampling}
            call = urllib.request.Request(self.url, data=json.dumps(payload).encode(),
                                          headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(call, timeout=30) as response:
                images.append(Image.open(io.BytesIO(response.read())).convert("RGB"))
        return images


class ColourAnswerer:
    """A toy VQA: the red channel decides the first choice."""

    fingerprint = "red-channel-v1"

    def score(self, images, question, choices, statements=None):
        first = np.array([np.asarray(image)[0, 0, 0] / 255.0 for image in images])
        rows = np.zeros((len(images), len(choices)))
        rows[:, 0] = first
        rows[:, 1:] = ((1 - first) / (len(choices) - 1))[:, None]
        return rows


_server = None


def pytest_t2ibias_make_generator(config, model, role):
    global _server
    if not model.startswith("http-demo"):
        return None  # not ours: the built-ins try
    if _server is None:
        _server = ThreadingHTTPServer(("127.0.0.1", 0), DrawHandler)
        threading.Thread(target=_server.serve_forever, daemon=True).start()
    if model == "http-demo-broken":
        return object()
    return HttpGenerator(f"http://127.0.0.1:{_server.server_port}/generate", model)


def pytest_t2ibias_make_vqa(config, model):
    return ColourAnswerer() if model == "red" else None
'''

SUITE = """\
suite: served
defaults: {{images_per_prompt: 4, seed: 0, steps: {steps}}}
prompt: "a photo of a {{subject}}"
subjects: [doctor]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
checks:
  - {{id: severity, kind: entropy_below, axes: [gender], threshold: 1.0}}
"""


@pytest.fixture
def served(pytester: pytest.Pytester, tmp_path) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_model = http-demo
        t2i_vqa = red
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_bootstrap = 50
    """))
    return pytester


def _run(pytester: pytest.Pytester, steps: int, tmp_path: Path, name: str) -> dict:
    pytester.makefile(".t2i.yaml", served=SUITE.format(steps=steps))
    report = tmp_path / f"{name}.json"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--t2i-json={report}"
                                  ).assert_outcomes(passed=1)
    return json.loads(report.read_text())["work"]


def test_changing_steps_regenerates_over_http(served, tmp_path):
    first = _run(served, 2, tmp_path, "first")
    assert first["images_generated"] == 4
    again = _run(served, 2, tmp_path, "again")  # same settings: all from the cache
    assert again["images_generated"] == 0 and again["images_from_cache"] == 4
    changed = _run(served, 3, tmp_path, "changed")  # steps changed: regenerated, not stale
    assert changed["images_generated"] == 4 and changed["images_from_cache"] == 0
    served_steps = [json.loads(line)["steps"]
                    for line in (served.path / "served.jsonl").read_text().splitlines()]
    assert served_steps == [2] * 4 + [3] * 4  # the server received the plan's steps


def test_a_hook_object_breaking_the_contract_is_one_paragraph(served):
    served.makefile(".t2i.yaml", served=SUITE.format(steps=2))
    result = served.runpytest("-p", "no:cacheprovider", "--t2i-model=http-demo-broken",
                              "--t2i-no-cache")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*could not run: ContractError: pytest_t2ibias_make_generator returned an object of "
        "class object (defined in builtins) for model 'http-demo-broken', which lacks "
        "fingerprint: str*generate(requests: list?ImageRequest?) -> list?PIL.Image?*"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_a_model_directory_declares_its_sampling(tmp_path):
    from dataclasses import replace

    from support.settings import SETTINGS

    model = tmp_path / "my-model"
    model.mkdir()
    (model / "t2ibias.json").write_text(json.dumps(
        {"sampling": {"num_inference_steps": 30, "guidance_scale": 4.0, "height": 64}}))
    assert declared_sampling(str(model))[0] == {"steps": 30, "guidance": 4.0, "height": 64}
    settings = replace(SETTINGS, model=str(model))
    plan = plan_for(settings)
    assert (plan.steps, plan.guidance, plan.height) == (30, 4.0, 64)
    assert plan.sampling_source == str(model / "t2ibias.json")
    assert plan_for(settings, steps=5).steps == 5  # the caller (or a suite, or the CLI) wins


def test_the_toy_build_declares_its_sampling_in_the_manifest():
    toy = Path(__file__).resolve().parents[2] / "fixtures" / "toy-sd"
    declared, source = declared_sampling(str(toy))
    assert declared == {"steps": 20, "guidance": 2.0, "scheduler": "DPMSolverMultistepScheduler"}
    assert source.endswith("manifest.json")


def test_a_backend_that_fails_to_load_is_tried_once_a_session():
    from dataclasses import replace

    from support.settings import SETTINGS

    from pytest_t2ibias.errors import BackendError
    from pytest_t2ibias.instrument import Models

    class Provider:
        calls = 0

        def generator(self, model, role):
            Provider.calls += 1
            raise BackendError(f"--t2i-model={model}: could not load the diffusers pipeline")

    models = Models(replace(SETTINGS, model="broken"), Provider())
    for _ in range(3):
        with pytest.raises(BackendError, match="could not load"):
            models.generator("candidate", "broken")
    assert Provider.calls == 1
