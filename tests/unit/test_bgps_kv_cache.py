"""BGPS' LLM with the context's keys and values cached: the same continuations and scores as
re-encoding every prefix, on a tiny GPT-2 and a tiny random Llama."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
from support.bgps_world import kind_settings

from pytest_t2ibias.backends.llm import CausalLM
from pytest_t2ibias.backends.token_lm import BeamSearchLM
from pytest_t2ibias.methods.bgps import bgps_search
from pytest_t2ibias.testing import make_tiny_causal_lm, torch_threads

WORDS = ["photo", "of", "person", "working", "as", "nurse", "doctor", "with", "intense", "focus", "in",
         "garden", "sunlit", "quiet", "afternoon", "please", "write", "prompt", "neutral"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    with torch_threads(1):
        yield


def tiny_llama(gpt2_dir, out_dir):
    """A random 2-layer Llama over the GPT-2's word tokenizer (built from a config, no download)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(gpt2_dir)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id))
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def causal_lm(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    path = make_tiny_causal_lm(root / "gpt2", words=WORDS)
    if request.param == "llama":
        path = tiny_llama(path, root / "llama")
    return CausalLM.from_pretrained(path, device="cpu", offline=True, batch_size=4)


class HashProbe:
    """A probability per text that depends on every word (so any drift in the LM's scores
    that reorders candidates would show), the same each call."""

    def __call__(self, prompts):
        return np.array([0.05 + 0.9 * (zlib.crc32(p.encode()) % 1000) / 1000 for p in prompts])


def test_cached_context_gives_the_same_next_token_logprobs(causal_lm):
    cached, plain = BeamSearchLM(causal_lm, instruction="please write a neutral prompt"), \
        BeamSearchLM(causal_lm, instruction="please write a neutral prompt", kv_cache=False)
    context = cached.encode_prefix("a photo of a person working as a")
    assert plain.encode_prefix("a photo of a person working as a") == context
    ids = causal_lm.tokenizer.convert_tokens_to_ids(["nurse", "with", "intense", "focus"])
    sequences = [context, context + ids[:1], context + ids, context + ids[:2], ids]  # the last: no shared context
    np.testing.assert_allclose(cached.next_token_logprobs(sequences), plain.next_token_logprobs(sequences),
                               atol=1e-5)
    # batches smaller than the sequences: the cache is copied, never extended in place
    causal_lm.batch_size = 2
    try:
        np.testing.assert_allclose(cached.next_token_logprobs(sequences), plain.next_token_logprobs(sequences),
                                   atol=1e-5)
    finally:
        causal_lm.batch_size = 4


def test_search_finds_the_same_prompts_with_the_same_scores(causal_lm):
    settings = kind_settings(beam=3, expansion=3, max_new_tokens=5, prompts=3, seed=1)
    runs = [bgps_search(BeamSearchLM(causal_lm, instruction="please write a neutral prompt", kv_cache=kv),
                        HashProbe(), settings) for kv in (True, False)]
    assert runs[0].texts == runs[1].texts and runs[0].texts
    np.testing.assert_allclose([p.score for p in runs[0].prompts], [p.score for p in runs[1].prompts], atol=1e-4)
    np.testing.assert_allclose([p.lm_log_likelihood for p in runs[0].prompts],
                               [p.lm_log_likelihood for p in runs[1].prompts], atol=1e-4)
