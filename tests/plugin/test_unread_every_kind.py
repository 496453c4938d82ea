"""Issue #47: every kind's prompts decide on unread words, one rule for all (``kinds._work.
deciding_prompts``): a check whose subject the generator reads as ``<unk>`` never passes,
whatever its kind, its burden or ``--t2i-strict-prompts``."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_t2ibias._settings import Settings
from pytest_t2ibias._types import Estimate
from pytest_t2ibias.errors import UnreadPrompt
from pytest_t2ibias.figures import unread_prompts
from pytest_t2ibias.kinds import BUILTIN_KINDS, CHECK_KINDS, PlannedItem, deciding_prompts, work_of
from pytest_t2ibias.plan import plan_for
from pytest_t2ibias.suite.load import load_suite
from pytest_t2ibias.verdict import BURDENS, INCONCLUSIVE, Verdict

ROOT = Path(__file__).resolve().parents[2]
UNREAD = "qwzx"
"""A word no tokenizer of the toy models reads (toy-sd reads it as ``<unk>``)."""
DRAWS_NO_GENERATED_IMAGE = {"judge_agrees"}
"""Kinds that judge a folder of labelled images: no prompt of theirs reaches a generator."""
SEARCHES_ONLY = {"no_bgps_prompt_exceeds"}
"""Kinds every prompt of which another wrote (BGPS: the LLM's finds, its λ = 0 baseline, and
a neutral prompt measured for reference only): flagged when unread, never deciding, as a
search's finds always were (the gate is about the prompts a model responds to, read or not)."""


def _example_check(kind: str):
    """The first check of ``kind`` in the example suites, with its suite."""
    for path in sorted(ROOT.glob("example_suites/**/*.t2i.yaml")):
        if kind not in path.read_text():
            continue
        suite = load_suite(path)
        for check in suite.checks:
            if check.kind == kind:
                return suite, check
    raise LookupError(f"no example suite has a {kind} check")


def _unread_item(kind: str) -> PlannedItem:
    """The kind's example check on a subject the generator cannot read (a kind with one item
    per check: its own prompt, BGPS' neutral prompt, made unread)."""
    suite, check = _example_check(kind)
    if kind == "no_bgps_prompt_exceeds":
        check = replace(check, params=replace(check.params,
                                              neutral_prompt=f"a photo of a {UNREAD}"))
    settings = Settings.standalone(model="m", vqa="v")
    axis = suite.axes[check.axes[0]] if check.axes else None
    subject = UNREAD if CHECK_KINDS[kind].per_subject else ""
    return PlannedItem(suite, check, subject, axis, plan_for(settings, suite, check))


def _drawn(work) -> set[str]:
    """Every prompt the item sends a generator, as its work names them (placeholders aside)."""
    return {d.prompt for d in (*work.planned, *(work.expected or ())) if d.role is not None
            and not d.prompt.startswith("<")}


@pytest.mark.parametrize("kind", BUILTIN_KINDS)
def test_no_kind_passes_on_a_prompt_the_generator_cannot_read(kind):
    item = _unread_item(kind)
    work = work_of(item)
    assert work.error is None, work.error
    unread = {p: f"{UNREAD} unknown to tokenizer (read as <unk>)" for p in _drawn(work)
              if UNREAD in p}
    if kind in DRAWS_NO_GENERATED_IMAGE:
        assert not _drawn(work)  # the exemption holds: nothing it draws is generated
        return
    if kind in SEARCHES_ONLY:  # the exemption holds: the kind marks every prompt another's
        assert unread and not deciding_prompts(item, work)
        return
    assert unread, f"{kind}: the example draws no prompt with the unread word"
    decisive = deciding_prompts(item, work)
    green = Verdict(kind, Estimate(0.1, 0.0, 0.2, 40), 0.3, "ok", "pass")
    for burden in BURDENS:
        for strict in (False, True):
            try:
                said = unread_prompts(replace(green, burden=burden), unread,
                                      decisive=decisive, strict=strict)
            except UnreadPrompt:
                continue
            assert not strict and said.outcome == INCONCLUSIVE and not said.passed, (
                f"{kind} under burden {burden}, strict {strict}: {said.outcome}")


def test_the_prompts_a_kind_did_not_write_still_do_not_decide():
    """OpenBias' judge audit is the method's prompts: flagged when unread, never deciding
    (issues #27, #36)."""
    openset = _unread_item("open_set")
    work = work_of(openset)
    audit = {d.prompt for d in work.expected or () if d.images == openset.check.params.judge_images
             and d.prompt not in {o.prompt for o in work.own}}
    assert audit and not audit & deciding_prompts(openset, work)


TOY_WORDS = "a photo of an doctor nurse male female person if all individuals can be".split()
ENTIGEN = """\
suite: oov
defaults: {images_per_prompt: 4, seed: 0, steps: 2}
prompt: "a photo of a {subject}"
subjects: [qwzx]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
checks:
  - {id: entigen, kind: intervention_improves, axes: [gender],
     interventions: ["if all individuals can be a {subject}"], min_improvement: 0.0, burden: check}
"""


@pytest.fixture(scope="module")
def toy_words_models(tmp_path_factory):
    """Built outside any pytester test: a pytester test forgets the modules first imported in
    it (torch's among them), and torch cannot register its operators twice."""
    from pytest_t2ibias.testing import make_tiny_clip, make_tiny_pipeline

    root = tmp_path_factory.mktemp("toy-words")
    return (make_tiny_pipeline(root / "sd", words=TOY_WORDS),
            make_tiny_clip(root / "clip", words=TOY_WORDS))


def test_an_intervention_on_an_unread_subject_is_an_error_not_a_pass(pytester, tmp_path,
                                                                     toy_words_models):
    """The issue's case end to end: toy-sd reads 'qwzx' as <unk>; under burden: check an
    intervention_improves check on it passed, and is now ERROR UnreadPrompt."""
    model, vqa = toy_words_models
    pytester.makefile(".t2i.yaml", oov=ENTIGEN)
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {model}
        t2i_vqa = {vqa}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 100
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*UnreadPrompt*qwzx unknown to tokenizer*"])
