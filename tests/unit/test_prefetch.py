"""One plan per session: the selected checks' images and answers, computed up front in full
batches across prompts and checks; the checks then compute nothing more."""

from __future__ import annotations

from support.prefetch_world import SUITE, Provider

from pytest_t2ibias._settings import Settings
from pytest_t2ibias.instrument import Instrument, Models
from pytest_t2ibias.kinds import CHECK_KINDS, CheckContext, PlannedItem
from pytest_t2ibias.plan import Levels, plan_for
from pytest_t2ibias.prefetch import prefetch
from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.store.request_layer import RequestLayer
from pytest_t2ibias.suite.load import load_suite


def test_the_plan_batches_across_prompts_and_checks_and_the_checks_compute_nothing(tmp_path):
    path = tmp_path / "tiny.t2i.yaml"
    path.write_text(SUITE)
    suite = load_suite(path)
    settings = Settings.standalone(model="m", vqa="v", batch_size=8)
    provider = Provider()
    requests = RequestLayer(Cache(tmp_path / "cache"), batch_size=8)
    models = Models(settings, provider)

    def instrument_for(plan):
        return Instrument(models, requests, plan)

    items = [PlannedItem(suite, check, subject, suite.axes[axis], plan_for(settings, suite, check))
             for check in suite.checks for subject in suite.subjects
             for axis in (check.axes or ["gender"])]
    assert prefetch(items, instrument_for) == len(items)
    # 6 prompts (2 originals + 4 counterfactuals) x 3 images, in batches of 8 across prompts
    assert [len(b) for b in provider.painter.batches] == [8, 8, 2]
    assert len(set(provider.painter.batches[0])) > 1
    # one call per question, for every planned image at once
    assert sorted(provider.scorer.calls) == [("What is the age of the person?", 18),
                                             ("What is the gender of the person?", 18)]
    planned = (requests.counters.images_generated, requests.counters.answers_scored)

    for item in items:
        context = CheckContext(check=item.check, suite=suite, subject=item.subject,
                               axis=item.axis, plan=item.plan, instrument=instrument_for(item.plan),
                               levels=Levels(None, 0.9), n_resamples=50,
                               phrase=lambda s, subject: s)
        CHECK_KINDS[item.check.kind].run(context)
    assert (requests.counters.images_generated, requests.counters.answers_scored) == planned
