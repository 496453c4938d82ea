"""A check kind is one module: its declaration alone makes it take part in validation,
prefetch, power planning and the HTML figure; and every kind computes its intervals at the
run's ``--t2i-confidence`` when it does not gate."""

from __future__ import annotations

import pytest
from support.fake_backends import Provider

from pytest_t2ibias._settings import Settings
from pytest_t2ibias.instrument import Instrument, Models
from pytest_t2ibias.kinds import (
    CHECK_KINDS,
    COMMON_PARAMS,
    NUMBER,
    CheckContext,
    CheckKind,
    Param,
    PlannedItem,
    planned,
)
from pytest_t2ibias.kinds.entropy_below import evaluate_entropy_below
from pytest_t2ibias.plan import Levels, plan_for
from pytest_t2ibias.planner import plan_item
from pytest_t2ibias.prefetch import prefetch
from pytest_t2ibias.reports.html import render_html
from pytest_t2ibias.reports.rows import ReportRow
from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.store.request_layer import RequestLayer
from pytest_t2ibias.suite.load import load_suite

SUITE = """\
suite: purple
defaults: {images_per_prompt: 4, seed: 0}
prompt: "a photo of a {subject}"
subjects: [mug]
axes:
  colour:
    question: "What colour is the mug?"
    choices: [purple, green]
checks:
  - {id: not_all_purple, kind: purple_share_below, axes: [colour], threshold: 0.9}
  - {id: balance, kind: entropy_below, axes: [colour], threshold: 1.0}
"""


# -- a user's kind, written as one module would be ------------------------------------------


def evaluate_purple_share(answers, threshold, *, confidence=None, interval_confidence=None,
                          burden="model", label=""):
    """The share of the first choice, judged like ``entropy_below``'s severity (a stand-in
    figure: what matters here is which parts of the plugin the declaration reaches)."""
    verdict = evaluate_entropy_below(answers, threshold, confidence=confidence,
                                     interval_confidence=interval_confidence, burden=burden,
                                     label=label)
    return verdict


def run_purple_share(ctx: CheckContext):
    images = ctx.instrument.images([ctx.suite.prompt_for(ctx.subject)])
    answers = ctx.instrument.attributes(images, ctx.axis, ctx.suite.filter)
    return evaluate_purple_share(answers, ctx.check.params.threshold,
                                 confidence=ctx.confidence,
                                 interval_confidence=ctx.interval_confidence, label=ctx.label)


PURPLE = CheckKind(
    name="purple_share_below",
    run=run_purple_share,
    params=(Param("axes", (list,), required=True), Param("threshold", NUMBER, required=True),
            *COMMON_PARAMS),
    doc="the subject is purple at most threshold of the time",
    work=lambda item: planned(item, [("candidate", [item.suite.prompt_for(item.subject)])],
                              [item.axis]),
    power_metric="severity",
    limit=lambda params: params.threshold,
    figure="purple share",
)


@pytest.fixture
def purple_kind(monkeypatch):
    monkeypatch.setitem(CHECK_KINDS, PURPLE.name, PURPLE)
    return PURPLE


@pytest.fixture
def world(tmp_path):
    path = tmp_path / "purple.t2i.yaml"
    path.write_text(SUITE)
    return tmp_path, path


def _instrumented(tmp_path, settings):
    provider = Provider()
    requests = RequestLayer(Cache(tmp_path / "cache"), batch_size=16)
    models = Models(settings, provider)
    return provider, requests, (lambda plan: Instrument(models, requests, plan))


def test_a_users_kind_takes_part_in_prefetch_power_and_the_html_figure(purple_kind, world):
    tmp_path, path = world
    suite = load_suite(path)  # validated against the declaration's parameters
    check = suite.checks[0]
    settings = Settings.standalone(model="m", vqa="v")
    plan = plan_for(settings, suite, check)
    provider, requests, instrument_for = _instrumented(tmp_path, settings)
    item = PlannedItem(suite, check, "mug", suite.axes["colour"], plan)

    # prefetch: the declared image needs are generated and the declared axis asked, up front
    assert prefetch([item], instrument_for) == 1
    assert provider.painter.prompts == ["a photo of a mug"] * 4
    assert provider.scorer.questions == [("What colour is the mug?", 4)]

    # power planning: the declared metric and prompt count
    planned = plan_item("purple::not_all_purple[mug-colour]", item, power=0.9)
    assert planned.prompts == 1 and planned.images == 4
    assert planned.needed is not None and planned.needed > 4
    assert "no power model" not in planned.note

    # the run finds everything prefetched, and the HTML names the declared figure
    context = CheckContext(check=check, suite=suite, subject="mug", axis=suite.axes["colour"],
                           plan=plan, instrument=instrument_for(plan), levels=plan.levels,
                           n_resamples=50, phrase=lambda s, subject: s)
    before = requests.counters.images_generated
    verdict = CHECK_KINDS["purple_share_below"].run(context)
    assert requests.counters.images_generated == before
    estimate = verdict.value
    row = ReportRow(nodeid="purple.t2i.yaml::not_all_purple[mug-colour]",
                    check="purple_share_below", subject="mug", axis="colour",
                    value=estimate.value, low=estimate.low, high=estimate.high, n=estimate.n,
                    confidence=estimate.confidence, threshold=0.9,
                    figures={}, outcome=verdict.outcome)
    assert "purple share (colour)" in render_html([row])


def test_a_kind_without_the_optional_parts_is_planned_as_a_search(monkeypatch, world):
    """Only ``name`` and ``run`` are required: such a kind requests as it goes."""
    tmp_path, path = world
    bare = CheckKind("purple_share_below", run=run_purple_share, params=PURPLE.params)
    monkeypatch.setitem(CHECK_KINDS, bare.name, bare)
    suite = load_suite(path)
    settings = Settings.standalone(model="m", vqa="v")
    provider, _, instrument_for = _instrumented(tmp_path, settings)
    item = PlannedItem(suite, suite.checks[0], "mug", suite.axes["colour"],
                       plan_for(settings, suite, suite.checks[0]))
    assert prefetch([item], instrument_for) == 0 and provider.painter.prompts == []
    planned = plan_item("x", item, power=0.9)
    assert planned.prompts is None and planned.note == "no power model for this kind"
    assert "purple_share_below (colour)" in render_html([ReportRow(
        nodeid="x", check=bare.name, subject="mug", axis="colour", value=0.1, low=0.0,
        high=0.2, n=4, confidence=0.95, threshold=0.9, figures={},
        outcome="pass")])


def test_a_run_is_a_callable_not_a_string():
    with pytest.raises(TypeError, match="run must be a callable"):
        from pytest_t2ibias.kinds import register_check

        register_check(CheckKind("by_name", run="pytest_t2ibias.checks:run_by_name"))  # type: ignore[arg-type]


# -- the confidence of an ungated check's interval (issue #21) --------------------------------


@pytest.mark.parametrize("level", [0.80, 0.99])
@pytest.mark.parametrize("kind", ["entropy_below", "w1_below", "max_skew_below"])
def test_an_ungated_check_computes_its_interval_at_the_runs_confidence(world, kind, level):
    """Was: 0.95 whatever ``--t2i-confidence`` said (``DEFAULT_CONFIDENCE``)."""
    tmp_path, path = world
    path.write_text(SUITE.replace("purple_share_below", kind).replace("threshold: 0.9",
                                                                     "threshold: 0.9"))
    suite = load_suite(path)
    check = suite.checks[0]
    settings = Settings.standalone(model="m", vqa="v", confidence=level)
    plan = plan_for(settings, suite, check)
    assert plan.levels == Levels(None, level)
    _, _, instrument_for = _instrumented(tmp_path, settings)
    context = CheckContext(check=check, suite=suite, subject="mug", axis=suite.axes["colour"],
                           plan=plan, instrument=instrument_for(plan), levels=plan.levels,
                           n_resamples=200, phrase=lambda s, subject: s)
    verdict = CHECK_KINDS[kind].run(context)
    assert verdict.confidence is None  # a point decision
    assert verdict.value.confidence == pytest.approx(level)


def test_a_gated_check_computes_its_interval_at_its_gate():
    levels = Levels.of(0.99, 0.80)
    assert levels == Levels(0.99, 0.99)
    assert levels.gated_at(0.995) == Levels(0.995, 0.995)  # the family's adjustment
    assert Levels.of(None, 0.80).gated_at(None) == Levels(None, 0.80)

