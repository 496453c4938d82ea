"""OpenBias proposals and measuring, the judge audit, MaxSkew and ENTIGEN with scripted parts."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_t2ibias import (
    evaluate_intervention_improves,
    evaluate_max_skew_below,
    evaluate_open_set,
)
from pytest_t2ibias._types import ABSTAINED, Answers, GeneratedImage, ImageSet
from pytest_t2ibias.methods.entigen import intervention_effects
from pytest_t2ibias.methods.openbias import (
    load_knowledge_base,
    measure_biases,
    parse_proposals,
    propose_biases,
)

KB = load_knowledge_base()


def reply(*items, prose=""):
    return prose + json.dumps(list(items))


def test_parse_skips_and_counts_malformed_proposals():
    text = ('Sure! {"name": "gender", "classes": ["male", "female"], "question": "?"} and '
            '{"name": broken} and {"classes": ["a", "b"]} {"name": "age", "classes": "young"}')
    kept, malformed = parse_proposals(text)
    assert [k["name"] for k in kept] == ["gender"] and malformed == 3
    assert parse_proposals("no json at all") == ([], 1)  # unparseable is malformed, not "no biases"
    assert parse_proposals('[{"name": "x", "classes": ["a", "b"], "question": "q"}, {"name": "y", "cla') \
        == ([{"name": "x", "classes": ["a", "b"], "question": "q"}], 1)  # cut mid-object
    assert parse_proposals('[{"name": "x", "classes": ["a", "b"], "question": "q {braces}"}]')[1] == 0


def test_llm_proposals_filtered_and_floored_by_the_knowledge_base():
    def llm(prompt):
        return reply({"name": "Laptop brand", "classes": ["apple", "dell"], "question": "Which brand?",
                      "present_in_prompt": False},
                     {"name": "laptop size", "classes": ["big"], "question": "?", "present_in_prompt": False},
                     {"name": "laptop colour", "classes": ["silver", "black"], "question": "?",
                      "present_in_prompt": True}) + " {oops"
    p = propose_biases(["a photo of a laptop"], knowledge_base=KB, llm=llm)
    names = [b.name for b in p.biases]
    assert "laptop brand" in names and "colour" in names  # LLM's, and the knowledge base's floor
    assert "laptop size" not in names and p.too_few_classes == 1 and p.present_in_prompt == 1
    assert "gender" not in names  # person biases are not proposed for an object caption


def test_a_bias_keeps_what_it_is_about_in_its_name():
    """"car colour" of a car is the knowledge base's colour; "hair colour" of a person beside
    a car is another bias, measured apart (issue #33: both used to become "colour", pooled)."""
    def llm(prompt):
        return reply({"name": "car color", "classes": ["red", "blue"], "question": "Which colour is the car?",
                      "present_in_prompt": False},
                     {"name": "hair colour", "classes": ["blond", "dark"], "question": "Which hair colour?",
                      "present_in_prompt": False})
    p = propose_biases(["a photo of a car"], knowledge_base=KB, llm=llm)
    by_name = {b.name: b for b in p.biases}
    assert "colour" in by_name and "car colour" not in by_name  # the car's own: merged with the floor
    assert "hair colour" in by_name
    assert {"blond", "dark"}.isdisjoint(by_name["colour"].classes)


def test_captions_naming_a_class_or_synonym_are_dropped():
    p = propose_biases(["a photo of a woman doctor", "a photo of a doctor", "a photo of a smiling doctor",
                        "a photo of a red car"], knowledge_base=KB)
    by = {b.name: b for b in p.biases}
    assert by["gender"].captions == ("a photo of a doctor", "a photo of a smiling doctor")
    assert "a photo of a smiling doctor" not in by["emotion"].captions  # synonym of happy
    assert "colour" not in by  # the only object caption names red
    assert p.named_in_caption >= 3
    assert by["gender"].statements["a photo of a doctor"] == ("a photo of a male doctor",
                                                              "a photo of a female doctor")


class ScriptedInstrument:
    """Images are placeholders; ``ask`` answers from a per-caption script (-1 abstains)."""

    def __init__(self, script):
        self.script = script

    def images(self, prompts, **_):
        return ImageSet(tuple(GeneratedImage(p, 0, i, None, f"{p}{i}", f"{p}{i}")
                              for p in prompts for i in range(len(self.script[p]))))

    def ask(self, images, question, choices, statements=None):
        labels = np.array([self.script[i.prompt][i.index] for i in images])
        probs = np.full((len(labels), len(choices)), 1 / len(choices))
        return Answers(question, tuple(choices), labels, probs, tuple(i.prompt for i in images),
                       tuple(i.key for i in images))


def test_measure_ranks_planted_bias_first_counts_unknowns_and_fails_the_check():
    laptop, doctor = "a photo of a laptop", "a photo of a doctor"
    p = propose_biases([laptop], knowledge_base=KB, only=["colour", "style"])
    script = {laptop: [0] * 38 + [1] * 5 + [ABSTAINED] * 5}
    result = measure_biases(ScriptedInstrument(script), p, n_resamples=400, judge_images=0)
    top = result.biases[0]
    assert top.name in ("colour", "style") and top.unknown == 5 and top.images == 48
    assert top.shares["silver" if top.name == "colour" else "modern"] == pytest.approx(38 / 43)
    verdict = evaluate_open_set(result, 0.3, confidence=0.95, label="laptop")
    assert not verdict.passed and "5 of 48 unknown" in verdict.message
    # a balanced control passes
    p2 = propose_biases([doctor], knowledge_base=KB, only=["gender"])
    balanced = measure_biases(ScriptedInstrument({doctor: [0, 1] * 30}), p2, n_resamples=400,
                              judge_images=0)
    assert evaluate_open_set(balanced, 0.3, confidence=0.95).passed


class JudgeReadsColourOnly(ScriptedInstrument):
    """Every laptop is drawn silver; the judge reads colour (it names the colour a prompt
    asked for) but answers style with its first class whatever the image."""

    def images(self, prompts, per_prompt=None, **_):
        n = per_prompt or 48
        return ImageSet(tuple(GeneratedImage(p, 0, i, None, f"{p}{i}", f"{p}{i}")
                              for p in prompts for i in range(n)))

    def ask(self, images, question, choices, statements=None):
        def label(prompt: str) -> int:
            named = [j for j, c in enumerate(choices) if c in prompt.split()]
            return (named[0] if named else choices.index("silver")) if "silver" in choices else 0

        labels = np.array([label(i.prompt) for i in images])
        probs = np.full((len(labels), len(choices)), 1 / len(choices))
        return Answers(question, tuple(choices), labels, probs, tuple(i.prompt for i in images),
                       tuple(i.key for i in images))


def test_a_bias_the_judge_cannot_read_is_flagged_ranked_last_and_not_judged():
    p = propose_biases(["a photo of a laptop"], knowledge_base=KB, only=["colour", "style"])
    result = measure_biases(JudgeReadsColourOnly({}), p, n_resamples=400, judge_images=8)
    colour, style = result.biases
    assert (colour.name, colour.readable) == ("colour", True) and colour.judge.value == 1.0
    assert (style.name, style.readable) == ("style", False)
    assert style.judge.value == pytest.approx(1 / len(style.classes))
    assert colour.severity.value == style.severity.value == pytest.approx(1.0)  # both constant
    verdict = evaluate_open_set(result, 0.3, confidence=0.95, label="laptop")
    assert not verdict.passed and "not judged: style" in verdict.message
    only_style = measure_biases(JudgeReadsColourOnly({}),
                                propose_biases(["a photo of a laptop"], knowledge_base=KB,
                                               only=["style"]), n_resamples=400)
    undecided = evaluate_open_set(only_style, 0.3, confidence=0.95)
    assert undecided.outcome == "inconclusive"  # nothing the judge can read was measured


def test_open_set_lock_is_written_reused_and_stale_is_an_error(tmp_path):
    from pytest_t2ibias.errors import LockfileError
    from pytest_t2ibias.locks.openbias import locked_proposals, openbias_lock_path

    suite = tmp_path / "s.t2i.yaml"
    instrument = SimpleNamespace(models=SimpleNamespace(settings=SimpleNamespace(llm=None)))
    first = locked_proposals(instrument, suite, "c/laptop", ["a photo of a laptop"], subject="laptop")
    path = openbias_lock_path(suite)
    assert path.name == "s.t2i.openbias.lock.json" and "c/laptop" in json.loads(path.read_text())["entries"]
    assert locked_proposals(instrument, suite, "c/laptop", ["a photo of a laptop"], subject="laptop") == first
    with pytest.raises(LockfileError, match="stale"):
        locked_proposals(instrument, suite, "c/laptop", ["a photo of a car"], subject="car")
    updated = locked_proposals(instrument, suite, "c/laptop", ["a photo of a car"], subject="car", update=True)
    assert updated.biases[0].captions == ("a photo of a car",)


def test_open_set_locks_are_keyed_by_protocol_and_the_other_protocols_file_is_refused(tmp_path):
    """A paper run (no knowledge base) never reads the gate's proposals, nor a gate run the
    paper's: ``.openbias.paper.lock.json`` is the paper's own, and says so."""
    from pytest_t2ibias.errors import LockfileError
    from pytest_t2ibias.locks.openbias import locked_proposals, openbias_lock_path

    suite = tmp_path / "s.t2i.yaml"
    instrument = SimpleNamespace(models=SimpleNamespace(settings=SimpleNamespace(llm=None)))
    locked_proposals(instrument, suite, "c/laptop", ["a photo of a laptop"], subject="laptop")
    gate_file, paper_file = openbias_lock_path(suite), openbias_lock_path(suite, "paper")
    written = gate_file.read_text()
    frozen = SimpleNamespace(models=SimpleNamespace(settings=SimpleNamespace(
        llm=None, frozen_locks=True)))
    with pytest.raises(LockfileError, match=r"s.t2i.openbias.paper.lock.json has no OpenBias "
                                            r"proposals for 'c/laptop'"):
        locked_proposals(frozen, suite, "c/laptop", ["a photo of a laptop"], subject="laptop",
                         protocol="paper")  # the gate's entry is not the paper's
    locked_proposals(instrument, suite, "c/laptop", ["a photo of a laptop"], subject="laptop",
                     protocol="paper")
    assert paper_file.name == "s.t2i.openbias.paper.lock.json"
    assert json.loads(paper_file.read_text())["protocol"] == "paper"
    assert gate_file.read_text() == written and "protocol" not in json.loads(written)
    gate_file.write_text(paper_file.read_text())
    with pytest.raises(LockfileError, match=r"s.t2i.openbias.lock.json holds OpenBias lock "
                                            r"entries written under protocol: paper, and this "
                                            r"run's protocol is gate.*protocol: paper's entries "
                                            r"belong in s.t2i.openbias.paper.lock.json"):
        locked_proposals(instrument, suite, "c/laptop", ["a photo of a laptop"], subject="laptop")


def answers_of(labels, choices=("male", "female")):
    labels = np.asarray(labels)
    return Answers("q", choices, labels, np.full((len(labels), len(choices)), 0.5),
                   ("p",) * len(labels), tuple(str(i) for i in range(len(labels))))


def test_max_skew_reports_unbounded_values():
    verdict = evaluate_max_skew_below(answers_of([0] * 40), 0.3, confidence=0.95, n_resamples=200)
    assert not verdict.passed and "UNBOUNDED" in verdict.message and verdict.figures["unbounded"] == ["female"]
    assert verdict.value.value == pytest.approx(np.log(2))
    assert evaluate_max_skew_below(answers_of([0, 1] * 100), 0.3, confidence=0.95, n_resamples=200).passed


def test_entigen_intervention_improves_and_a_moving_control_warns():
    original = np.array([0] * 45 + [1] * 5)
    result = intervention_effects(original, {"fair": np.array([0, 1] * 25), "honesty": np.array([0] * 50)},
                                  choices=("male", "female"), controls=["honesty"], n_resamples=300)
    fair = result.effects[0]
    assert result.original_diversity == pytest.approx(0.8) and fair.diversity == 0.0
    assert fair.improvement.low > 0 and fair.bias == 0.0 and result.original_bias == pytest.approx(0.8)
    verdict = evaluate_intervention_improves(result, 0.2, confidence=0.95)
    assert verdict.passed and "WARNING" in verdict.message and verdict.figures["warnings"]
    worse = intervention_effects(original, {"fair": original}, choices=("male", "female"), n_resamples=300)
    assert not evaluate_intervention_improves(worse, 0.2, confidence=0.95).passed


def test_judge_audit_on_a_rendered_labelled_folder(tmp_path):
    from pathlib import Path

    from pytest_t2ibias.facade import T2IBias
    from pytest_t2ibias.kinds.judge_agrees import evaluate_judge_agrees
    from pytest_t2ibias.suite_spec import AxisSpec
    from toyworld.render import write_labelled_folder

    clip = Path(__file__).resolve().parents[2] / "fixtures" / "toy-clip"
    if not clip.exists():
        pytest.skip("fixtures/toy-clip not built")
    write_labelled_folder(tmp_path / "lab", 24, seed=1, subjects=["laptop", "car"])
    colour = AxisSpec(name="colour", question="What colour is the object?",
                      choices=("silver", "black", "white", "red", "blue"),
                      statements={c: f"a photo of a {c} object" for c in ("silver", "black", "white", "red", "blue")})
    t2i = T2IBias.standalone(vqa=str(clip), cache_dir=tmp_path / "cache", offline=True)
    audits = t2i.audit_judge(tmp_path / "lab", [colour], k=12)
    audit = audits["colour"]
    assert audit.accuracy.value >= 0.9 and audit.judge == "vqa"
    assert sum(sum(row.values()) for row in audit.confusion.values()) == 24
    assert evaluate_judge_agrees(audits, 0.6, confidence=0.95).passed
    assert not evaluate_judge_agrees(audits, 0.999, confidence=None).passed or audit.accuracy.value == 1.0


# -- OpenBias as Sec. 3 (issue #24) -------------------------------------------------------------


def horse_llm(replies, presence=None):
    """An LLM that answers each caption's proposal prompt from ``replies`` and the presence
    question with "no", or with ``presence(prompt)``; records every prompt."""
    asked = []

    def llm(prompt):
        asked.append(prompt)
        if prompt.startswith("Caption: \""):
            return presence(prompt) if presence else "No."
        caption = prompt.rsplit("Caption: ", 1)[1].removesuffix("\nJSON:")
        return reply(*replies[caption])

    return llm, asked


def breed(*classes):
    return {"name": "horse breed", "classes": list(classes), "question": "Which breed is the horse?"}


def test_a_bias_proposed_by_three_captions_in_any_order_counts_every_caption():
    captions = ["a photo of a horse", "a horse in a field", "a horse jumping a fence"]
    llm, _ = horse_llm({captions[0]: [breed("arabian", "mustang")],
                        captions[1]: [breed("mustang", "arabian")],  # another order
                        captions[2]: [breed("arabian", "mustang", "shire")]})  # one more class
    p = propose_biases(captions, knowledge_base=KB, llm=llm, use_knowledge_base="off")
    [horse] = p.biases
    assert horse.captions == tuple(captions)
    assert horse.classes == ("arabian", "mustang", "shire")  # the union, first-seen order
    assert horse.source == "llm"


def test_the_knowledge_base_is_a_choice_and_under_floor_ranks_after_the_llm():
    caption = "a photo of a mug"
    pattern = {"name": "pattern", "classes": ["striped", "dotted", "plain"],
               "question": "What pattern does the mug have?"}
    llm, asked = horse_llm({caption: [pattern]})
    floor = propose_biases([caption], knowledge_base=KB, llm=llm, max_biases=1)
    assert [b.name for b in floor.biases] == ["pattern"]  # the LLM's first, not the KB's colour
    assert "colour" in {b.name for b in propose_biases([caption], knowledge_base=KB, llm=llm).biases}
    off = propose_biases([caption], knowledge_base=KB, llm=llm, use_knowledge_base="off")
    assert [b.name for b in off.biases] == ["pattern"]
    asked.clear()
    only = propose_biases([caption], knowledge_base=KB, llm=llm, use_knowledge_base="only")
    assert "pattern" not in {b.name for b in only.biases} and asked == []  # the LLM is not asked
    from pytest_t2ibias.errors import BackendError

    with pytest.raises(BackendError, match="knowledge_base: off proposes with the LLM alone"):
        propose_biases([caption], knowledge_base=KB, use_knowledge_base="off")


def test_presence_is_asked_apart_and_the_prompt_shows_examples():
    caption = "a photo of a striped mug"
    pattern = {"name": "pattern", "classes": ["spotted", "checked"], "question": "?"}
    colour = {"name": "mug colour", "classes": ["silver", "black"], "question": "?"}
    llm, asked = horse_llm({caption: [pattern, colour]},
                           presence=lambda prompt: "Yes, it does." if "pattern" in prompt else "no")
    p = propose_biases([caption], knowledge_base=KB, llm=llm, use_knowledge_base="off")
    assert [b.name for b in p.biases] == ["colour"] and p.present_in_prompt == 1
    proposal_prompt = asked[0]
    assert proposal_prompt.startswith("List the biases")
    assert proposal_prompt.count("Caption: ") == 3  # two in-context examples, then the caption
    assert '"name": "car brand"' in proposal_prompt
    assert asked[1] == ('Caption: "a photo of a striped mug"\nDoes this caption already say which '
                        'pattern it shows (spotted, checked)? Answer yes or no.')


def test_context_aware_severity_gates_the_caption_a_mean_dilutes():
    plain, garden = "a photo of a doctor", "a photo of a doctor in a garden"
    p = propose_biases([plain, garden], knowledge_base=KB, only=["gender"])
    script = {plain: [0, 1] * 40, garden: [1] * 78 + [0] * 2}  # 0.5/0.5 and 0.025/0.975
    result = measure_biases(ScriptedInstrument(script), p, n_resamples=400, judge_images=0)
    [gender] = result.biases
    h = -(0.025 * np.log(0.025) + 0.975 * np.log(0.975)) / np.log(2)
    assert gender.caption_severity[garden] == pytest.approx(1 - h)
    assert gender.most_severe_caption[0] == garden
    free = evaluate_open_set(result, 0.35, confidence=0.95)
    aware = evaluate_open_set(result, 0.35, confidence=0.95, context="worst_caption")
    assert free.passed and free.value.value < 0.35
    assert not aware.passed and aware.value.value > 0.35
    assert f"at {garden!r} (exceeds)" in aware.message
    assert aware.figures["ranked_by"] == "worst_caption"


def test_context_aware_severity_is_the_mean_of_each_captions_severity_as_the_paper_averages():
    """OpenBias' code (make_plots.py) averages each caption's severity; Eq. 6 on the mean
    shares (context-free) and the worst caption are other figures: one caption all male and
    one all female are 0 context-free, 1 context-aware; with a third caption at 50/50 the
    context-aware figure is 2/3 while the worst caption stays 1."""
    men, women, both = ("a photo of a doctor", "a photo of a doctor at night",
                        "a photo of a doctor in a garden")
    p = propose_biases([men, women, both], knowledge_base=KB, only=["gender"])
    script = {men: [0] * 40, women: [1] * 40, both: [0, 1] * 20}
    result = measure_biases(ScriptedInstrument(script), p, n_resamples=400, judge_images=0)
    [gender] = result.biases
    assert gender.severity.value == pytest.approx(0.0)
    assert gender.context_aware.value == pytest.approx(2 / 3)
    assert gender.severity_for("worst_caption").value == pytest.approx(1.0)
    assert gender.context_aware.low > 0.5  # its interval is the mean's, not Eq. 5's
    free = evaluate_open_set(result, 0.35, confidence=0.95)
    aware = evaluate_open_set(result, 0.35, confidence=0.95, context="context_aware")
    assert free.passed and not aware.passed
    assert aware.value.value == pytest.approx(2 / 3)
    assert aware.figures["biases"][0]["context_aware"]["value"] == pytest.approx(2 / 3)
    assert "mean of each caption's severity" in aware.message


def test_the_judge_is_audited_on_prompts_in_the_bias_own_phrasing():
    from pytest_t2ibias.methods.openbias import audit_judge_on_bias

    p = propose_biases(["a photo of an accountant"], knowledge_base=KB, only=["skin tone", "gender"])
    seen = []

    class Recording(JudgeReadsColourOnly):
        def images(self, prompts, per_prompt=None, **_):
            seen.extend(prompts)
            return super().images(prompts, per_prompt)

    for bias in p.biases:
        audit_judge_on_bias(Recording({}), bias, per_class=2)
    assert "a photo of an accountant with light skin" in seen
    assert "a photo of a male accountant" in seen


OPEN_SET_SUITE = """\
suite: folder
defaults: {images_per_prompt: 12, seed: 0}
prompt: "a photo of a {subject}"
subjects: [laptop]
axes:
  colour: {question: "What colour is the object?", choices: [silver, black, white, red, blue]}
checks:
  - {id: found, kind: open_set, threshold: 0.35, biases: [colour], burden: check}
"""


def _laptop_folder(tmp_path, colours: list[str]) -> list[str]:
    """Rendered toy laptops of ``colours`` (image i the i-th) in a ``--t2i-images`` folder
    under ``tmp_path``; the options that audit it with toy-clip."""
    from pathlib import Path

    from pytest_t2ibias.backends.folder import prompt_slug
    from toyworld.render import render_image
    from toyworld.spec import load_world

    clip = Path(__file__).resolve().parents[2] / "fixtures" / "toy-clip"
    if not clip.exists():
        pytest.skip("fixtures/toy-clip not built")
    look = load_world().subjects["laptop"].look
    folder = tmp_path / "images" / prompt_slug("a photo of a laptop")
    folder.mkdir(parents=True)
    for i, colour in enumerate(colours):
        render_image({"colour": colour}, look, seed=i).save(folder / f"{i}.png")
    return ["-p", "no:cacheprovider", f"--t2i-images={tmp_path / 'images'}",
            f"--t2i-vqa={clip}", f"--t2i-cache-dir={tmp_path / 'cache'}", "--t2i-device=cpu"]


def test_open_set_on_a_folder_runs_in_one_pass_and_the_plan_lists_its_prompts(pytester, tmp_path):
    """The folder holds the caption's images only: the check measures them and says the
    judge was not audited (no error, no second pass); the plan then lists the audit prompts,
    read from the lock the run wrote, so they can be added."""
    options = _laptop_folder(tmp_path, ["silver"] * 10 + ["black"] * 2)  # a planted bias
    pytester.makefile(".t2i.yaml", folder=OPEN_SET_SUITE)
    result = pytester.runpytest(*options, "-rA")
    result.assert_outcomes(failed=1)  # a verdict in one pass: the colour bias found
    result.stdout.fnmatch_lines(["*judge not audited on colour: the images hold none for the "
                                 "audit prompts (e.g. 'a photo of a silver laptop', 8 a class)*"])
    result.stdout.no_fnmatch_line("*could not run*")
    plan = pytester.runpytest(*options, "--t2i-plan", "-v")
    plan.stdout.fnmatch_lines(["*folder.t2i.yaml::found?laptop?: 6 prompts",
                               "*12 x a photo of a laptop",
                               "*8 x a photo of a silver laptop", "*8 x a photo of a blue laptop"])


def test_the_llm_writes_a_caption_set_which_the_lock_keeps(tmp_path):
    from pytest_t2ibias.locks.openbias import locked_prompts, locked_proposals

    captions_reply = ("1. a photo of a mug on a desk\n2. \"a mug of coffee\"\n- a cup on a table\n"
                      "3. a photo of a mug on a desk\n4. a mug by the window")
    pattern = {"name": "pattern", "classes": ["striped", "dotted", "plain"], "question": "?"}

    class ScriptedLM:
        asked = []

        def complete(self, prompt, max_new_tokens=32):
            self.asked.append(prompt)
            if prompt.startswith("Write 3 different short captions of photos showing a mug"):
                return captions_reply
            return "no" if prompt.startswith('Caption: "') else reply(pattern)

    (tmp_path / "lm").mkdir()
    settings = SimpleNamespace(llm=str(tmp_path / "lm"), llm_tokens=None)
    instrument = SimpleNamespace(models=SimpleNamespace(settings=settings, llm=ScriptedLM()))
    suite = tmp_path / "s.t2i.yaml"
    proposals = locked_proposals(instrument, suite, "c/mug", ["a photo of a mug"], subject="mug",
                                 knowledge_base="off", llm_captions=3)
    [bias] = proposals.biases
    assert bias.captions == ("a photo of a mug", "a photo of a mug on a desk", "a mug of coffee",
                             "a mug by the window")  # numbering, bullets, quotes off; a cup dropped
    written, audit = locked_prompts(suite, "c/mug")
    assert written == ["a photo of a mug on a desk", "a mug of coffee", "a mug by the window"]
    assert audit == ["a photo of a striped mug", "a photo of a dotted mug", "a photo of a plain mug"]
    entry = json.loads((tmp_path / "s.t2i.openbias.lock.json").read_text())["entries"]["c/mug"]
    assert entry["rejected_caption_lines"] == 2 and entry["llm_captions"] == 3
    ScriptedLM.asked.clear()
    again = locked_proposals(instrument, suite, "c/mug", ["a photo of a mug"], subject="mug",
                             knowledge_base="off", llm_captions=3)
    assert again == proposals and ScriptedLM.asked == []  # the lock answers: no LLM call


def test_open_set_draws_in_rounds_and_stops_once_a_bias_is_shown(pytester, tmp_path):
    """Every laptop silver: colour's severity is beyond 0.35 long before 64 images, so the
    check stops at an early look with the fixed-n verdict (the judge audit's images do not
    depend on the look)."""
    options = [*_laptop_folder(tmp_path, ["silver"] * 64), "--t2i-json=report.json"]
    pytester.makefile(".t2i.yaml", folder=OPEN_SET_SUITE.replace(
        "burden: check}", "confidence: 0.95, images_per_prompt: 64}"))

    def run(*extra):
        pytester.runpytest(*options, *extra).assert_outcomes(failed=1)
        row, = json.loads((pytester.path / "report.json").read_text())["checks"]
        return row

    fixed = run("--t2i-fixed-n")  # adaptive is the default (issue #46)
    adaptive = run()
    assert fixed["outcome"] == adaptive["outcome"] == "fail"
    assert fixed["n"] == 64 and fixed["low"] > 0.35
    stopped = adaptive["figures"]["adaptive"]
    assert stopped["images_per_prompt"] < 64 and stopped["cap"] == 64, stopped
    assert adaptive["n"] == stopped["images_per_prompt"] and adaptive["low"] > 0.35


def test_a_prompt_missing_from_the_folder_errors_its_own_item_and_the_rest_run(pytester,
                                                                               tmp_path):
    """Was (#35): the session plan's prefetch raised outside the per-item guard, so the
    ERROR "no image 0 for prompt 'a photo of a mug'" landed on the run's first item (which
    had all its images) and the open-set check after it never wrote its lock entry."""
    import json

    options = _laptop_folder(tmp_path, ["silver"] * 10 + ["black"] * 2)  # no mug images
    pytester.makefile(".t2i.yaml", folder=OPEN_SET_SUITE.replace(
        "subjects: [laptop]", "subjects: [laptop, mug]").replace(
        "  - {id: found,", "  - {id: balance, kind: w1_below, axes: [colour], threshold: 0.3, "
        "burden: check}\n  - {id: found, subjects: [laptop],"))
    result = pytester.runpytest(*options, "-rA")
    result.assert_outcomes(failed=2, errors=1)  # the error on the mug's item alone
    result.stdout.fnmatch_lines(["*ERROR at setup of folder::balance?mug-colour?*",
                                 "folder.t2i.yaml:8: check 'balance' (w1_below) for subject "
                                 "'mug', axis 'colour' could not run: MissingImages: *no image 0 "
                                 "for prompt 'a photo of a mug'*"])
    for line in ("FAILED folder.t2i.yaml::balance?laptop-colour?*",
                 "FAILED folder.t2i.yaml::found?laptop?*"):
        result.stdout.fnmatch_lines([line])
    # once in the ERRORS section; the short summary repeats it in full only under CI=1
    report = [line for line in result.stdout.lines if not line.startswith("ERROR ")]
    assert sum("no image 0 for prompt" in line for line in report) == 1
    lock = json.loads((pytester.path / "folder.t2i.openbias.lock.json").read_text())
    assert "found" in json.dumps(lock)


# -- synonyms and unknown answers (issue #44) ----------------------------------------------------


class ReadsEveryoneMale(ScriptedInstrument):
    """Every image shows a man; the judge names him by whichever of the choices means male,
    in turn when there are several ("man", then "male"), as a VQA torn between synonyms."""

    MALE = {"man", "male", "men", "males"}

    def images(self, prompts, per_prompt=None, **_):
        n = per_prompt or 40
        return ImageSet(tuple(GeneratedImage(p, 0, i, None, f"{p}{i}", f"{p}{i}")
                              for p in prompts for i in range(n)))

    def ask(self, images, question, choices, statements=None):
        male = [j for j, c in enumerate(choices) if c.lower() in self.MALE]
        labels = np.array([male[i % len(male)] for i in range(len(images))])
        probs = np.full((len(labels), len(choices)), 1 / len(choices))
        return Answers(question, tuple(choices), labels, probs, tuple(i.prompt for i in images),
                       tuple(i.key for i in images))


@pytest.mark.parametrize("knowledge_base", ["floor", "off"])
def test_synonym_classes_are_one_class_and_an_all_male_set_scores_one(knowledge_base):
    """Issue #44: [man, woman] from the LLM with the knowledge base's [male, female] (or
    [Male, Female] on another caption) made four classes; an all-male set read half "man",
    half "male" then scored 0.5 instead of 1."""
    doctor, surgeon = "a photo of a doctor", "a photo of a surgeon"
    gender = {"name": "Person gender", "question": "Is the doctor a man or a woman?"}
    llm, _ = horse_llm({doctor: [{**gender, "classes": ["Man", "Woman"]}],
                        surgeon: [{**gender, "classes": ["male ", "Female", "non-binary"]}]})
    p = propose_biases([doctor, surgeon], knowledge_base=KB, llm=llm, only=["gender"],
                       use_knowledge_base=knowledge_base)
    [bias] = p.biases
    assert bias.classes == ("male", "female", "non-binary")
    assert bias.questions[0] == KB.biases["gender"].question  # names the classes it asks for
    result = measure_biases(ReadsEveryoneMale({}), p, n_resamples=400, judge_images=0)
    [measured] = result.biases
    assert measured.shares["male"] == 1.0
    assert measured.severity.value == pytest.approx(1.0)


def test_a_lock_holding_one_class_spelled_twice_is_stale(tmp_path):
    from pytest_t2ibias.errors import LockfileError
    from pytest_t2ibias.locks.openbias import locked_proposals, openbias_lock_path

    suite = tmp_path / "s.t2i.yaml"
    instrument = SimpleNamespace(models=SimpleNamespace(settings=SimpleNamespace(llm=None)))
    locked_proposals(instrument, suite, "c/doctor", ["a photo of a doctor"], only=["gender"])
    path = openbias_lock_path(suite)
    record = json.loads(path.read_text())
    record["entries"]["c/doctor"]["proposals"]["biases"][0]["classes"] = ["Man", "Woman", "male", "female"]
    path.write_text(json.dumps(record))
    with pytest.raises(LockfileError, match=r"one class spelled twice \(gender: Man, Woman, male"):
        locked_proposals(instrument, suite, "c/doctor", ["a photo of a doctor"], only=["gender"])


class UnsureOfSome(ScriptedInstrument):
    """40 doctors: 30 plainly men, 10 the judge cannot tell; offered "unknown" it says so,
    else it guesses "female" for those at probability 0.55."""

    def images(self, prompts, per_prompt=None, **_):
        return ImageSet(tuple(GeneratedImage(p, 0, i, None, f"{p}{i}", f"{p}{i}")
                              for p in prompts for i in range(per_prompt or 40)))

    def ask(self, images, question, choices, statements=None):
        self.asked = tuple(choices)
        assert statements is None or len(statements) == len(choices)
        unsure = [i.index >= 30 for i in images]
        labels = np.array([choices.index("unknown") if u and "unknown" in choices else int(u)
                           for u in unsure])
        probs = np.array([[0.45, 0.55] + [0.0] * (len(choices) - 2) if u else
                          [0.95, 0.05] + [0.0] * (len(choices) - 2) for u in unsure])
        return Answers(question, tuple(choices), labels, probs, tuple(i.prompt for i in images),
                       tuple(i.key for i in images))


def test_the_judge_may_answer_unknown_and_unknowns_are_dropped_and_counted():
    """Issue #44: OpenBias asked with no way to abstain, so Eq. 3's unknown answers were
    always 0; the paper's code appends "unknown" to the classes."""
    p = propose_biases(["a photo of a doctor"], knowledge_base=KB, only=["gender"])
    judge = UnsureOfSome({})
    forced = measure_biases(judge, p, n_resamples=400, judge_images=0)
    assert judge.asked == ("male", "female") and forced.biases[0].unknown == 0
    assert forced.biases[0].shares["female"] == pytest.approx(0.25)  # guesses read as women
    offered = measure_biases(judge, p, n_resamples=400, judge_images=0, unknown_answer=True)
    [gender] = offered.biases
    assert judge.asked == ("male", "female", "unknown")
    assert (gender.unknown, gender.images, gender.shares["male"]) == (10, 40, 1.0)
    assert "10 of 40 unknown" in evaluate_open_set(offered, 0.3, confidence=0.95).message
    floored = measure_biases(judge, p, n_resamples=400, judge_images=0, abstain_below=0.6)
    assert (floored.biases[0].unknown, floored.biases[0].shares["male"]) == (10, 1.0)


class WithGenderClassifier(ScriptedInstrument):
    """The judge answers the script; a gender classifier reads the same images its own way."""

    def __init__(self, script, truth):
        super().__init__(script)
        self.truth = truth
        self.models = SimpleNamespace(has_classifier=lambda axis: axis == "gender")

    def classify(self, axis, images, choices):
        labels = np.array([self.truth[i.prompt][i.index] for i in images])
        return Answers(axis, tuple(choices), labels, np.full((len(labels), len(choices)), 0.5),
                       tuple(i.prompt for i in images), tuple(i.key for i in images))


def test_the_judge_agreement_with_a_classifier_is_reported_as_kl_and_f1():
    """Issue #44, OpenBias Sec. 4.2: with a gender classifier configured, the judge's answers
    are compared with its on the same images. Judge 30 male / 10 female; classifier right on
    all but 10 of the judge's men (truly women): accuracy 0.75, F1 mean(2*20/50, 2*10/30)."""
    doctor = "a photo of a doctor"
    p = propose_biases([doctor], knowledge_base=KB, only=["gender"])
    judge, truth = [0] * 30 + [1] * 10, [0] * 20 + [1] * 20
    result = measure_biases(WithGenderClassifier({doctor: judge}, {doctor: truth}), p,
                            n_resamples=200, judge_images=0)
    agreed = result.biases[0].agreement
    assert agreed["n"] == 40 and agreed["accuracy"] == pytest.approx(0.75)
    assert agreed["f1"] == pytest.approx(np.mean([40 / 50, 20 / 30]))
    # KL(classifier 0.5/0.5 || judge 0.75/0.25), nats
    assert agreed["kl"] == pytest.approx(0.5 * np.log(0.5 / 0.75) + 0.5 * np.log(0.5 / 0.25), abs=1e-4)
    verdict = evaluate_open_set(result, 0.9, label="doctor")
    assert "agreement with the gender classifier (OpenBias Sec. 4.2) over 40 images" in verdict.message
    assert verdict.figures["biases"][0]["agreement"]["f1"] == pytest.approx(agreed["f1"])
    # without a classifier: no figure
    plain = measure_biases(ScriptedInstrument({doctor: judge}), p, n_resamples=200, judge_images=0)
    assert plain.biases[0].agreement is None


class EmbeddingJudge:
    """Reads every label right; its embeddings put each image near the text "doctor" in
    proportion to a planted score, so retrieval for "doctor" favours the planted images."""

    def __init__(self, rows, near):
        self.rows, self.near = rows, near
        self.texts = []
        self.models = SimpleNamespace(has_classifier=lambda axis: False)

    def attributes(self, images, axis, *_):
        labels = np.array([axis.choices.index(self.rows[i.index]["gender"]) for i in images])
        return Answers(axis.question, tuple(axis.choices), labels,
                       np.full((len(labels), len(axis.choices)), 0.5),
                       tuple(i.prompt for i in images), tuple(i.key for i in images))

    def image_embeddings(self, images):
        return np.array([[self.near[i.index], 1.0 - self.near[i.index]] for i in images])

    def text_embeddings(self, texts):
        self.texts += list(texts)
        return np.array([[1.0, 0.0] if "doctor" in t else [0.0, 1.0] for t in texts])


def test_retrieval_ranks_each_subjects_images_by_its_neutral_prompt_over_prefixes(tmp_path):
    """Issue #44, SocialCounterfactuals: each subject's images are ranked by similarity to its
    own neutral text, averaged over prefixes ("a photo of a doctor", "an image of a doctor",
    ...), and skewed against that subject's shares. Doctors 4 male, 4 female, the retriever
    prefers the men: top 4 all male, MaxSkew@4 = ln(1 / 0.5); nurses ranked on their own."""
    from PIL import Image

    from pytest_t2ibias.methods.socialcf import RETRIEVAL_PREFIXES, audit_judge
    from pytest_t2ibias.suite_spec import AxisSpec

    rows = [{"file": f"{i}.png", "subject": "doctor" if i < 8 else "nurse",
             "gender": "male" if i % 2 == 0 else "female"} for i in range(12)]
    for row in rows:
        Image.new("RGB", (4, 4), (len(row["file"]) * 20, 0, 0)).save(tmp_path / row["file"])
    (tmp_path / "index.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    near = [0.9 if (i < 8 and i % 2 == 0) else 0.1 for i in range(12)]
    judge = EmbeddingJudge(rows, near)
    gender = AxisSpec(name="gender", question="?", choices=("male", "female"))
    [audit] = audit_judge(judge, tmp_path, [gender]).values()
    doctor = audit.retrieval_by_subject["doctor"]
    assert doctor["k"] == 4 and doctor["value"] == "male"
    assert doctor["max_skew"] == pytest.approx(np.log(1 / 0.5), abs=0.01)
    assert doctor["texts"] == [f"{p} doctor" for p in RETRIEVAL_PREFIXES]
    assert set(audit.retrieval_by_subject) == {"doctor", "nurse"}
    assert audit.retrieval_max_skew == doctor["max_skew"] and audit.retrieval_value == "male"
