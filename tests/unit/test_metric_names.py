"""Honest metric names (issue #43): the report names what a cost figure is (CLIPScore x2.5 on
the run's judge, KID on the judge's CLIP features), and ``image_quality`` takes torchmetrics'
named CLIP-IQA prompt pairs."""

from __future__ import annotations

import textwrap

import pytest

from pytest_t2ibias.errors import SuiteError
from pytest_t2ibias.kinds import CHECK_KINDS
from pytest_t2ibias.kinds.image_quality import pair_of, title_for
from pytest_t2ibias.suite.load import load_suite


def test_cost_figures_name_their_scale_and_features():
    alignment, shift = CHECK_KINDS["prompt_alignment"], CHECK_KINDS["distribution_shift"]
    assert alignment.figure == "CLIPScore x2.5 change (run's judge)"
    assert "not torchmetrics' 100 * cos" in alignment.doc
    assert shift.figure == "KID (judge's CLIP features)"
    assert "not torchmetrics' KID on Inception features" in shift.doc
    from pytest_t2ibias.kinds import distribution_shift, prompt_alignment

    assert prompt_alignment.TITLE == "prompt alignment (CLIPScore x2.5, run's judge)"
    assert distribution_shift.TITLE == "distribution shift (KID on the judge's CLIP features)"


SUITE = """\
suite: s
prompt: "a photo of a {{subject}}"
subjects: [doctor]
axes: {{gender: {{question: "Gender?", choices: [male, female]}}}}
checks:
  - {{id: q, kind: image_quality, antonyms: {antonyms}}}
"""


@pytest.mark.parametrize("antonyms, pair", [
    ("brightness", ("Bright photo.", "Dark photo.")),
    ("[sharpness]", ("Sharp photo.", "Blurry photo.")),
    ("Happy", ("Happy photo.", "Sad photo.")),
    ("quality", None),  # the default pair: its answers keep their cache keys
    ("[Crisp photo., Murky photo.]", ("Crisp photo.", "Murky photo.")),
])
def test_image_quality_takes_torchmetrics_prompt_names(tmp_path, antonyms, pair):
    path = tmp_path / "s.t2i.yaml"
    path.write_text(SUITE.format(antonyms=antonyms))
    [check] = load_suite(path).checks
    assert pair_of(check.params.antonyms) == pair
    if pair:
        assert title_for(check.params.antonyms) == f'image quality ("{pair[0]}" over "{pair[1]}")'


def test_an_unknown_prompt_name_lists_the_known_ones(tmp_path):
    path = tmp_path / "s.t2i.yaml"
    path.write_text(textwrap.dedent(SUITE.format(antonyms="shiny")))
    with pytest.raises(SuiteError, match="must be two different captions.*name of a CLIP-IQA prompt "
                                         "pair.*brightness.*got 'shiny'"):
        load_suite(path)
