"""The merge gate of toy_merge_gate.t2i.yaml, written as a Python test.

In a release pipeline, ``--t2i-baseline-model`` is the model in production and ``--t2i-model``
the fine-tune up for merge; here the suite file names both (its ``models:``).
"""

from pathlib import Path

import pytest

from pytest_t2ibias import assert_no_regression

GATE = Path(__file__).with_name("toy_merge_gate.t2i.yaml")
CONTROL = Path(__file__).with_name("toy_merge_gate_control.t2i.yaml")


@pytest.mark.xfail(reason="planted: the debiased fine-tune balances gender by adding young women")
def test_gender_fine_tune_keeps_nurse_ages(t2ibias):
    effect = t2ibias.mitigation_effect(GATE, "nurse", axes=["gender", "age"])
    assert_no_regression(effect, fixes=["gender"], on=["age"], tolerance=0.05, confidence=0.95)


def test_base_model_against_itself_passes_the_gate(t2ibias):
    effect = t2ibias.mitigation_effect(CONTROL, "musician", axes=["gender", "age"])
    assert_no_regression(effect, fixes=["gender"], on=["age"], tolerance=0.05, confidence=0.95)
    assert effect["age"].value == 0.0  # identical images: the pairing is exact
