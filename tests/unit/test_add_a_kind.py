"""docs/ARCHITECTURE.md's recipe, followed: a new kind is one module and one registry line,
and with nothing else it is validated, planned, prefetched, power-planned, charted and
documented (issue #34)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest
from support.added_kind import MODULE
from support.fake_backends import Provider

from pytest_t2ibias._settings import Settings
from pytest_t2ibias.errors import SuiteError
from pytest_t2ibias.instrument import Instrument, Models
from pytest_t2ibias.kinds import CHECK_KINDS, CheckContext, PlannedItem, register_check, work_of
from pytest_t2ibias.plan import plan_for
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
  - {id: mostly_not_purple, kind: first_share_below, axes: [colour], threshold: 0.9,
     confidence: 0.95}
"""


@pytest.fixture
def new_kind(tmp_path, monkeypatch):
    """The recipe: one module ... and one registry line."""
    path = tmp_path / "first_share_below.py"
    path.write_text(textwrap.dedent(MODULE))
    spec = importlib.util.spec_from_file_location("first_share_below", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "first_share_below", module)
    spec.loader.exec_module(module)
    saved = dict(CHECK_KINDS)
    register_check(module.KIND)  # the registry line
    yield module.KIND
    CHECK_KINDS.clear()
    CHECK_KINDS.update(saved)


def test_a_kind_in_one_module_and_a_registry_line_takes_part_everywhere(new_kind, tmp_path):
    path = tmp_path / "purple.t2i.yaml"
    path.write_text(SUITE)

    # validated: its typed parameters, built by the loader; a bad value is a collection error
    suite = load_suite(path)
    check = suite.checks[0]
    assert check.params.threshold == 0.9 and check.params.axes == ("colour",)
    bad = tmp_path / "bad.t2i.yaml"
    bad.write_text(SUITE.replace("threshold: 0.9", "threshold: 2"))
    with pytest.raises(SuiteError, match=r"bad.t2i.yaml:10: .*threshold must lie in \[0, 1\]"):
        load_suite(bad)

    # planned: its work names the subject's images and the axis read off each
    settings = Settings.standalone(model="m", vqa="v")
    plan = plan_for(settings, suite, check)
    item = PlannedItem(suite, check, "mug", suite.axes["colour"], plan)
    work = work_of(item)
    assert [(d.role, d.prompt, d.images) for d in work.planned] == [
        ("candidate", "a photo of a mug", 4)]
    assert work.complete and work.prompts() == [("candidate", "a photo of a mug", 4)]

    # prefetched: those images and answers are computed up front, and the run finds them
    provider = Provider()
    requests = RequestLayer(Cache(tmp_path / "cache"), batch_size=16)
    models = Models(settings, provider)
    assert prefetch([item], lambda p: Instrument(models, requests, p)) == 1
    assert provider.painter.prompts == ["a photo of a mug"] * 4
    assert provider.scorer.questions == [("What colour is the mug?", 4)]
    context = CheckContext(check=check, suite=suite, subject="mug", axis=suite.axes["colour"],
                           plan=plan, instrument=Instrument(models, requests, plan),
                           levels=plan.levels, n_resamples=50, phrase=lambda s, subject: s)
    before = requests.counters.images_generated
    verdict = new_kind.run(context)
    assert requests.counters.images_generated == before

    # power-planned: its metric simulated around its limit
    planned = plan_item("purple.t2i.yaml::mostly_not_purple[mug-colour]", item, power=0.9)
    assert planned.prompts == 1 and planned.needed is not None and planned.needed > 4

    # charted: the HTML draws the lines its chart makes of the figures
    estimate = verdict.value
    row = ReportRow(nodeid="purple.t2i.yaml::mostly_not_purple[mug-colour]",
                    check=new_kind.name, subject="mug", axis="colour", value=estimate.value,
                    low=estimate.low, high=estimate.high, n=estimate.n,
                    confidence=estimate.confidence, threshold=0.9,
                    figures={"first": {"value": 0.25, "low": 0.1, "high": 0.5}},
                    outcome=verdict.outcome)
    assert "first share, as charted" in render_html([row])

    # documented: the YAML reference's section and the JSON Schema, from its Params
    from docgen.reference import _kind
    from pytest_t2ibias.suite.schema import json_schema

    section = "\n".join(_kind(new_kind))
    assert "### `first_share_below`" in section
    assert "largest allowed share of the first choice" in section
    schema = json_schema({new_kind.name: new_kind})
    assert "first_share_below" in str(schema) and "threshold" in str(schema)
