"""CausalLM on a tiny GPT-2 with a word-level tokenizer: scores checked against the logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pytest_t2ibias.backends import CausalLM, LanguageModel
from pytest_t2ibias.testing import make_tiny_causal_lm, torch_threads

TEXTS = ["a photo of a doctor", "a nurse", "the old engineer is a woman in the image"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    path = make_tiny_causal_lm(tmp_path_factory.mktemp("lm") / "tiny-gpt2")
    return CausalLM.from_pretrained(path, device="cpu", offline=True, batch_size=8)


def manual_log_likelihood(lm, text):
    ids = torch.tensor([lm.tokenizer(text)["input_ids"]])  # <bos> words <eos>
    with torch.no_grad():
        logprobs = lm.model(input_ids=ids).logits[0].log_softmax(-1)
    return sum(logprobs[t - 1, ids[0, t]].item() for t in range(1, ids.shape[1])), ids.shape[1] - 1


def test_loads_gpt2(lm):
    assert isinstance(lm, LanguageModel)
    assert type(lm.model).__name__ == "GPT2LMHeadModel"


def test_log_likelihood_matches_manual_sum(lm):
    expected = [manual_log_likelihood(lm, text)[0] for text in TEXTS]
    np.testing.assert_allclose(lm.log_likelihood(TEXTS), expected, atol=1e-4)


def test_log_likelihood_is_padding_independent(lm):
    alone = np.concatenate([lm.log_likelihood([text]) for text in TEXTS])
    together = lm.log_likelihood(TEXTS)  # padded to the longest text
    np.testing.assert_allclose(together, alone, atol=1e-5)
    lm.batch_size = 2
    try:
        np.testing.assert_allclose(lm.log_likelihood(TEXTS), alone, atol=1e-5)
    finally:
        lm.batch_size = 8


def test_perplexity(lm):
    total, count = manual_log_likelihood(lm, TEXTS[2])
    assert lm.perplexity([TEXTS[2]])[0] == pytest.approx(np.exp(-total / count), rel=1e-4)


def test_next_token_logprobs_continue_the_prefix(lm):
    rows = lm.next_token_logprobs(["a photo of", "a"])
    assert rows.shape == (2, len(lm.tokenizer))
    np.testing.assert_allclose(np.exp(rows).sum(1), 1.0, atol=1e-5)
    ids = torch.tensor([lm.tokenizer("a photo of")["input_ids"][:-1]])  # without <eos>
    with torch.no_grad():
        expected = lm.model(input_ids=ids).logits[0, -1].log_softmax(-1).numpy()
    np.testing.assert_allclose(rows[0], expected, atol=1e-5)


def test_complete_is_greedy_and_deterministic(lm):
    text = lm.complete("a photo of", max_new_tokens=4)
    assert text == lm.complete("a photo of", max_new_tokens=4)
    ids = lm.tokenizer("a photo of")["input_ids"][:-1]
    for _ in range(4):
        with torch.no_grad():
            next_id = int(lm.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        if next_id == lm.tokenizer.eos_token_id:
            break
        ids.append(next_id)
    expected = lm.tokenizer.decode(ids[4:], skip_special_tokens=True).strip()
    assert text == expected


def test_fingerprint_names_the_weights(lm, tmp_path):
    other = CausalLM.from_pretrained(make_tiny_causal_lm(tmp_path / "seed1", seed=1), device="cpu", offline=True)
    assert other.fingerprint != lm.fingerprint
