"""OpenBias with an LLM as people run one: the chat template, a budget a JSON list fits, a cut
reply counted as malformed and shown, and an LLM that raises an ERROR (issue #22).

The LLM is a tiny chat Llama (``make_tiny_chat_lm``) whose ``generate`` is scripted to write a
fixed reply token by token, so everything around it (template, budget, decoding, EOS) is real.
"""

from __future__ import annotations

import json

import pytest

THREE = [
    {"name": "hairstyle", "classes": ["short", "long", "curly"], "question": "What is the hairstyle?",
     "present_in_prompt": False},
    {"name": "glasses", "classes": ["glasses", "no glasses"], "question": "Does the person wear glasses?",
     "present_in_prompt": False},
    {"name": "setting", "classes": ["hospital", "office", "outdoors"], "question": "Where is the person?",
     "present_in_prompt": False},
]
REPLY = json.dumps(THREE)
CAPTIONS = ["a photo of a doctor"]


@pytest.fixture(scope="module")
def chat_lm(tmp_path_factory):
    from pytest_t2ibias.backends.llm import CausalLM
    from pytest_t2ibias.testing import make_tiny_chat_lm

    path = make_tiny_chat_lm(tmp_path_factory.mktemp("llm") / "chat", corpus=[REPLY])
    return CausalLM.from_pretrained(path, device="cpu")


@pytest.fixture
def scripted(chat_lm, monkeypatch):
    """``chat_lm`` whose greedy generation writes REPLY then EOS, within max_new_tokens."""
    seen = scripted_reply(chat_lm, monkeypatch, REPLY)
    return chat_lm, seen, len(chat_lm.tokenizer(REPLY, add_special_tokens=False)["input_ids"])


def propose(llm):
    from pytest_t2ibias.methods.openbias import load_knowledge_base, propose_biases

    return propose_biases(CAPTIONS, knowledge_base=load_knowledge_base(), llm=llm)


def test_a_full_reply_proposes_all_three_through_the_chat_template(scripted):
    from pytest_t2ibias.locks.openbias import proposal_llm

    lm, seen, reply_tokens = scripted
    assert reply_tokens > 32  # one list of three does not fit the old 32-token budget
    proposals = propose(proposal_llm(lm))
    from_llm = {b.name for b in proposals.biases if b.source == "llm"}
    assert from_llm == {"hairstyle", "glasses", "setting"} and proposals.malformed == 0
    assert seen[0].startswith("<bos>[user] List the biases") and seen[0].endswith("<bos>[assistant] ")


def test_the_same_reply_cut_at_32_tokens_is_counted_malformed_and_shown(scripted):
    from pytest_t2ibias.kinds.open_set import evaluate_open_set
    from pytest_t2ibias.locks.openbias import proposal_llm
    from pytest_t2ibias.methods.openbias import OpenBiasResult

    lm, _, _ = scripted
    reply = lm.reply("x", max_new_tokens=32)
    assert reply.cut and reply.new_tokens == 32
    proposals = propose(proposal_llm(lm, 32))
    assert proposals.malformed == 1
    assert {b.name for b in proposals.biases if b.source == "llm"} < {"hairstyle", "glasses", "setting"}
    verdict = evaluate_open_set(OpenBiasResult((), proposals), threshold=1.0)
    assert "proposals dropped: malformed 1" in verdict.message


def test_a_raw_lm_without_a_template_gets_raw_text(tmp_path):
    from pytest_t2ibias.backends.llm import CausalLM
    from pytest_t2ibias.testing import make_tiny_causal_lm

    lm = CausalLM.from_pretrained(make_tiny_causal_lm(tmp_path / "gpt2"), device="cpu")
    assert not getattr(lm.tokenizer, "chat_template", None)
    reply = lm.reply("a photo of a doctor", max_new_tokens=4)
    assert reply.new_tokens <= 4 and isinstance(reply.text, str)


def test_an_llm_that_raises_is_an_error_not_the_knowledge_base():
    from pytest_t2ibias.errors import BackendError

    def broken(prompt):
        raise RuntimeError("CUDA out of memory")

    with pytest.raises(BackendError, match="raised RuntimeError while proposing biases for the caption "
                                           "'a photo of a doctor': CUDA out of memory"):
        propose(broken)


# -- counterfactual phrasing through the same chat LLM ----------------------------------------


def scripted_reply(lm, monkeypatch, text):
    """``lm`` whose greedy generation writes ``text`` then EOS; returns the prompts it saw."""
    import torch

    seen = []
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"] + [lm.tokenizer.eos_token_id]

    def generate(input_ids, max_new_tokens, **_):
        seen.append(lm.tokenizer.decode(input_ids[0]))
        return torch.cat([input_ids, torch.tensor([ids[:max_new_tokens]])], dim=1)

    monkeypatch.setattr(lm.model, "generate", generate)
    return seen


EXAMPLES = [("a photo of a doctor", "male", "a photo of a male doctor"),
            ("a photo of a doctor", "young", "a photo of a young doctor")]


def test_a_chat_llm_phrases_counterfactuals_through_its_template(chat_lm, monkeypatch):
    from pytest_t2ibias.methods.counterfactuals import (
        few_shot_candidate,
        generation_settings,
    )

    # chat models often echo the question's line before the answer: the echo is cut off
    seen = scripted_reply(chat_lm, monkeypatch,
                          "a photo of a doctor + old -> a photo of an old doctor")
    candidate = few_shot_candidate(chat_lm, "a photo of a doctor", "old", "a photo of an old doctor",
                                   EXAMPLES)
    assert candidate.prompt == "a photo of an old doctor" and candidate.rejected is None
    assert seen[0].startswith("<bos>[user] Rewrite an image prompt") and \
        seen[0].endswith("<bos>[assistant] ")
    assert "a photo of a doctor + male -> a photo of a male doctor\n" in seen[0]
    assert generation_settings(chat_lm, 48)["few_shot_format"] == "chat template (user turn)"
    assert generation_settings(chat_lm, 48)["decoding"]["max_new_tokens"] == 48


def test_a_counterfactual_reply_cut_by_the_budget_is_rejected_and_says_so(chat_lm, monkeypatch):
    from pytest_t2ibias.methods.counterfactuals import choose_counterfactual

    scripted_reply(chat_lm, monkeypatch, "a photo of a doctor who looks rather old and tired")
    choice = choose_counterfactual(chat_lm, "a photo of a {subject}", "doctor", "old", EXAMPLES,
                                   max_new_tokens=4)
    [learned] = [c for c in choice.candidates if c.source == "few_shot"]
    assert learned.rejected == "cut by the token budget (4 new tokens; --t2i-llm-tokens)"
    assert choice.prompt != learned.prompt  # a rule candidate wins

    full = choose_counterfactual(chat_lm, "a photo of a {subject}", "doctor", "old", EXAMPLES,
                                 max_new_tokens=64)
    [learned] = [c for c in full.candidates if c.source == "few_shot"]
    assert learned.rejected is None and learned.mean_log_likelihood is not None


def test_the_toy_lm_proposes_the_pattern_no_knowledge_base_lists_and_skips_what_a_caption_names():
    """The committed toy LM (fixtures/toy-lm) answers the proposal prompt, in-context examples
    and all, with JSON: a mug's pattern, which only an LLM can propose, on both captions, and
    its colour only where the caption leaves it open (#24)."""
    from pathlib import Path

    from pytest_t2ibias.backends.llm import CausalLM
    from pytest_t2ibias.locks.openbias import proposal_llm
    from pytest_t2ibias.methods.openbias import load_knowledge_base, propose_biases

    toy_lm = CausalLM.from_pretrained(Path(__file__).resolve().parents[2] / "fixtures" / "toy-lm",
                                      device="cpu", offline=True)
    knowledge_base = load_knowledge_base()
    proposals = propose_biases(["a photo of a mug", "a photo of a red mug"], knowledge_base=knowledge_base,
                               llm=proposal_llm(toy_lm), use_knowledge_base="off")

    by_name = {bias.name: bias for bias in proposals.biases}
    assert "pattern" not in knowledge_base.biases
    assert by_name["pattern"].classes == ("plain", "striped", "dotted")
    assert by_name["pattern"].captions == ("a photo of a mug", "a photo of a red mug")
    assert by_name["pattern"].source == "llm"
    assert by_name["colour"].captions == ("a photo of a mug",)
    assert proposals.malformed == 0
