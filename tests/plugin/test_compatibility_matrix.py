"""The compatibility matrix (issue #22, docs/compatibility.md): every check kind run through the
real backends on every text-to-image architecture people release, judged by every kind of
judge, on tiny random-weight models (``model_zoo``).

One pytester run a cell: a suite holding every kind, run against one generator and one judge.
The verdicts of random models mean nothing; what is asserted is that every item reaches a
verdict with a measured value (none ERRORs), and that a cell that cannot work (a ViT image
classifier given as the VQA judge) ends as one ERROR paragraph per item naming the model's
class and what it lacks, in the table, the JSON report and the JUnit XML.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest
from PIL import Image
from support.tiny_models import import_every_class

from pytest_t2ibias.kinds import BUILTIN_KINDS, CHECK_KINDS
from pytest_t2ibias.testing.suites import sample_entry

import_every_class()  # before pytester's in-process runs (see there)

HEAD = """\
suite: matrix
burden: check
defaults: {images_per_prompt: 2, seed: 0, steps: 2, guidance: 2.0}
prompt: "a photo of a {subject}"
subjects: [doctor]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    statements: {male: "a photo of a male person", female: "a photo of a female person"}
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age (young, old) of the person?"
    choices: [young, old]
    ordered: true
    statements: {young: "a photo of a young person", old: "a photo of an old person"}
    counterfactuals: {young: "a photo of a young {subject}", old: "a photo of an old {subject}"}
checks:
"""

CHECKS = {
    "entropy_below": "{id: entropy, kind: entropy_below, axes: [gender], threshold: 1.0}",
    "w1_below": "{id: w1, kind: w1_below, axes: [gender], threshold: 1.0}",
    "max_skew_below": "{id: skew, kind: max_skew_below, axes: [gender], threshold: 5.0}",
    "is_nonnegative": "{id: spill, kind: is_nonnegative, mitigate: [gender], on: [age], tolerance: 1.0}",
    "no_regression": "{id: gate, kind: no_regression, fixes: [gender], on: [age], tolerance: 1.0}",
    "intermit": "{id: mit, kind: intermit, epsilon: 1.0}",
    # words of the tiny tokenizers only (DEFAULT_WORDS): an unread one ("or") decides (#47)
    "intervention_improves": ("{id: entigen, kind: intervention_improves, axes: [gender], "
                              "interventions: [a man a woman], controls: [in the image]}"),
    "open_set": "{id: open, kind: open_set, threshold: 1.0, max_biases: 1}",
    "judge_agrees": "{id: judge, kind: judge_agrees, folder: labelled, threshold: 0.0, axes: [gender]}",
    "no_bgps_prompt_exceeds": (
        "{id: hidden, kind: no_bgps_prompt_exceeds, target: {axis: gender, value: male}, "
        "threshold: 1.0, beam: 2, expansion: 2, prompts: 2, max_new_tokens: 2, latents: 2, "
        "step_index: 1, baseline: false}"),
    # random CLIP's cosines are <= 0, so every CLIPScore (2.5 max(cos, 0)) is 0 and the
    # relative change 0/0: the candidate's own mean is what a random judge can measure
    "prompt_alignment": "{id: align, kind: prompt_alignment, at_least: 0.0}",
    # the widest limits: a random model's cost means nothing, only that it is measured
    "vendi_diversity": "{id: vendi, kind: vendi_diversity, tolerance: 1.0}",
    "image_quality": "{id: iqa, kind: image_quality, tolerance: 1.0}",
    "distribution_shift": "{id: kid, kind: distribution_shift, at_most: 1000000.0}",
    "erasure": "{id: kept, kind: erasure, tolerance: 1.0}",
}
CHECKS = {kind: CHECKS.get(kind) or sample_entry(kind) for kind in BUILTIN_KINDS}
"""Every registered kind: the entries above where the matrix needs its own limits, else the
kind's sample (``CheckKind.sample``), so a kind added to the registry is in every cell."""
COSTS = tuple(kind for kind in CHECKS if CHECK_KINDS[kind].measures_cost)
"""What a fix cost (``CheckKind.measures_cost``), candidate against the ini's baseline model:
in a suite of their own with a person filter, which the erasure measure reads (the bias
kinds' suite has none, so that a random filter drops none of their images)."""
KINDS = tuple(CHECKS)
WITHOUT_BGPS = tuple(k for k in KINDS if k != "no_bgps_prompt_exceeds")
WITHOUT_OPEN_SET = tuple(k for k in KINDS if k != "open_set")


CELLS = [
    # generator, judge, LLM, the kinds its suite holds
    ("sd", "clip", "llama-chat", KINDS),
    ("sdxl", "blip", "llama-chat", WITHOUT_BGPS),
    ("sd3", "llava", "gpt2", WITHOUT_OPEN_SET),
    ("sd3-no-t5", "vit-gender", "llama-chat", KINDS),
    ("flux", "clip", "llama-chat", WITHOUT_BGPS),
    ("pixart", "blip", "gpt2", WITHOUT_OPEN_SET),
]
"""The cells run (docs/compatibility.md "What the test suite runs"): every generator, every
judge and both LLMs at least once. BGPS on SDXL and Flux is left to test_bgps_architectures.py;
GPT-2's 64 positions cannot hold OpenBias' instruction (the refusal test below)."""


CONTRASTIVE = {"clip"}
"""Judges with image and text embeddings. A generative judge (BLIP, LLaVA) has none, so the
cost kinds that read embeddings (CLIPScore, Vendi, KID) end as an ERROR row saying so; the
others (CLIP-IQA, erasure) reach a verdict on every judge."""
NO_EMBEDDINGS = ("has no image embeddings: the cost checks that read embeddings (CLIPScore, "
                 "Vendi, KID) need a contrastive judge's (CLIP, SigLIP)")


OPTIONS = {"sd3-no-t5": ["text_encoder_3=null", "tokenizer_3=null"]}
"""What a pipeline needs to load: SD3 saved without T5 has no text_encoder_3 to pass."""


FILTER = """\
filter:
  question: "Is there a person in the image?"
  choices: [yes, no]
  keep: yes
  statements: {yes: "a photo of a person", no: "a photo of an object"}
"""


def write_project(pytester, model_zoo, tmp_path, *, generator, vqa, llm, kinds, classifier=None):
    bias, costs = ([k for k in kinds if (k in COSTS) == cost] for cost in (False, True))
    pytester.makefile(".t2i.yaml", matrix=HEAD + "".join(f"  - {CHECKS[k]}\n" for k in bias))
    if costs:
        pytester.makefile(".t2i.yaml", costs=HEAD.replace("suite: matrix", "suite: costs")
                          .replace("checks:\n", FILTER + "checks:\n")
                          + "".join(f"  - {CHECKS[k]}\n" for k in costs))
    (pytester.path / "t2ibias.json").write_text("{}")
    labelled = pytester.path / "labelled"
    labelled.mkdir()
    with open(labelled / "index.jsonl", "w") as index:
        for i, value in enumerate(["male", "female", "male", "female"]):
            Image.new("RGB", (16, 16), (40 * i, 200 - 40 * i, 90)).save(labelled / f"{i}.png")
            index.write(json.dumps({"file": f"{i}.png", "gender": value}) + "\n")
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {model_zoo[generator]}
        t2i_baseline_model = {model_zoo['sd']}
        t2i_vqa = {model_zoo[vqa]}
        t2i_llm = {model_zoo[llm]}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 50
        # random-weight judges read nothing: every calibration would say "cannot read"
        t2i_judge_correction = off
        t2i_height = 16
        t2i_width = 16
        t2i_llm_tokens = 8
    """) + (f"t2i_classifier = gender={model_zoo[classifier]}\n" if classifier else "")
      + ("t2i_model_option =\n" + "".join(f"    {o}\n" for o in OPTIONS[generator])
         if generator in OPTIONS else ""))


def run_cell(pytester, tmp_path, *args):
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--t2i-json={report}",
                                f"--junitxml={junit}", *args)
    return result, json.loads(report.read_text()), ET.parse(junit).getroot()


@pytest.mark.parametrize("generator,judge,llm,kinds", CELLS, ids=[c[0] for c in CELLS])
def test_every_kind_reaches_a_verdict(pytester, model_zoo, tmp_path, generator, judge, llm, kinds):
    classifier = judge if judge.startswith("vit") else None
    write_project(pytester, model_zoo, tmp_path, generator=generator, llm=llm, kinds=kinds,
                  vqa="clip" if classifier else judge, classifier=classifier)
    result, report, _ = run_cell(pytester, tmp_path)
    rows = report["checks"]
    refused = [row for row in rows if row["status"] == "error" and judge not in CONTRASTIVE
               and CHECK_KINDS[row["check"]].measures_cost and NO_EMBEDDINGS in row["reason"]]
    errors = [f"{row['check']}: {row.get('reason')}" for row in rows
              if row["status"] == "error" and row not in refused]
    assert not errors, "\n".join(errors)
    assert {row["check"] for row in rows} == set(kinds)
    for row in rows:  # random models: any verdict, but a measured one
        if row in refused:  # an embedding cost on a generative judge: one paragraph says why
            continue
        assert row["status"] in ("passed", "failed") and not row["reason"], row
        if row["check"] == "open_set":  # proposed, generated, asked (a random judge cannot read it)
            assert [b["images"] for b in row["figures"]["biases"]] == [2], row["message"]
        else:
            assert row["n"] > 0, row
    assert result.ret == 0 or "failed" in result.parseoutcomes() or refused


def test_a_cell_that_cannot_work_is_an_error_row_naming_the_class_and_what_it_lacks(
        pytester, model_zoo, tmp_path):
    """A ViT image classifier given as the VQA judge, and GPT-2 (64 positions) asked for
    OpenBias proposals: one paragraph each, an ERROR row in the table, JSON and JUnit."""
    write_project(pytester, model_zoo, tmp_path, generator="sd", vqa="vit-gender", llm="gpt2",
                  kinds=("entropy_below", "judge_agrees"))
    pytester.makefile(".t2i.yaml", proposals=HEAD.replace("suite: matrix", "suite: proposals")
                      + f"  - {CHECKS['open_set']}\n")
    result, report, junit = run_cell(pytester, tmp_path)
    result.assert_outcomes(errors=3)
    vit = ("ViTForImageClassification is an image classifier (labels: male, female), not a "
           "visual question answering model: it has no text input")
    gpt2 = ("GPT2LMHeadModel attends over 64 tokens (its config's position table), but this "
            "instruction alone takes")
    rows = {row["check"]: row for row in report["checks"]}
    assert {row["status"] for row in rows.values()} == {"error"}
    assert vit in rows["entropy_below"]["reason"] and "--t2i-classifier=AXIS=" in rows["entropy_below"]["reason"]
    assert vit in rows["judge_agrees"]["reason"] or "said why in full" in rows["judge_agrees"]["reason"]
    assert gpt2 in rows["open_set"]["reason"] and "\n" not in rows["open_set"]["reason"]
    table = result.stdout.str().split("t2ibias: bias checks")[1]
    assert sum("ERROR BackendError" in line for line in table.splitlines()) == 3
    result.stdout.fnmatch_lines([f"*{vit}*", f"*{gpt2}*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    cases = junit.iter("testcase")
    messages = [e.get("message", "") + (e.text or "") for case in cases for e in case.iter("error")]
    assert len(messages) == 3
    assert any(vit in m for m in messages) and any(gpt2 in m for m in messages)
