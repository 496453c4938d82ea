"""BGPS end to end on the architectures people release: a YAML gate searched with a tiny LLM,
an h-space probe trained on a tiny SDXL / SD3 / Flux / PixArt, measured with a tiny CLIP; its
verdict (or a clear ERROR) reaches the table, the JSON report and the JUnit XML."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest
from support.tiny_models import import_every_class

import_every_class()  # before pytester's in-process runs (see there)

SUITE = """\
suite: hidden
defaults: {images_per_prompt: 2, seed: 0, steps: 3, guidance: 3.0}
prompt: "a photo of a {subject}"
subjects: [doctor, nurse]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    statements: {male: "a photo of a male person", female: "a photo of a female person"}
checks:
  - {id: hidden_male, kind: no_bgps_prompt_exceeds, target: {axis: gender, value: male},
     threshold: 1.0, beam: 2, expansion: 2, prompts: 2, max_new_tokens: 2, latents: 2,
     step_index: 1, baseline: false}
"""


def run_gate(pytester, model_zoo, tmp_path, generator):
    pytester.makefile(".t2i.yaml", hidden=SUITE)
    (pytester.path / "t2ibias.json").write_text("{}")
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {model_zoo[generator]}
        t2i_vqa = {model_zoo['clip']}
        t2i_llm = {model_zoo['gpt2']}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 100
    """))
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--t2i-json={report}",
                                f"--junitxml={junit}", "--t2i-height=16", "--t2i-width=16")
    return result, json.loads(report.read_text()), ET.parse(junit).getroot()


@pytest.mark.parametrize("generator", ["sdxl", "flux"])
def test_bgps_gate_reaches_a_verdict_in_every_report(pytester, model_zoo, tmp_path, generator):
    result, report, junit = run_gate(pytester, model_zoo, tmp_path, generator)
    result.assert_outcomes(passed=1)  # threshold 1.0: no share exceeds it
    result.stdout.fnmatch_lines(["*t2ibias summary*", "*hidden_male*"])
    [check] = report["checks"]
    assert check["kind"] == "no_bgps_prompt_exceeds" and check["status"] == "passed"
    assert int(junit.get("tests", junit.find("testsuite").get("tests"))) == 1
    lock = json.loads((pytester.path / "hidden.t2i.bgps.lock.json").read_text())
    assert len(lock["gates"]["hidden_male"]["search"]["prompts"]) >= 1
