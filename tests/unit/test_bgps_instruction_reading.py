"""An instruction the searching LLM cannot read is no instruction (issue #44): with more than
half of App. C's words unknown to its tokenizer, or read far worse than a uniform guess, the
BGPS search runs with none and the row says why; a few unread words are named and the
instruction kept; byte-level BPE tokenizers (GPT-2's, Llama's) read every word."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_t2ibias.backends.vocabulary import distinct_words
from pytest_t2ibias.locks.bgps import instruction_reading
from pytest_t2ibias.methods.bgps import (
    InstructionReading,
    paper_instruction,
    readable_instruction,
)
from pytest_t2ibias.testing import DEFAULT_WORDS
from pytest_t2ibias.testing.tokenizer import build_word_tokenizer, train_text_tokenizer

APP_C = paper_instruction("gender")
TOY_LM = Path(__file__).resolve().parents[2] / "fixtures" / "toy-lm"


class TokenizerOnly:
    """An LLM seen through its tokenizer alone (no perplexity to ask)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer


def test_a_word_level_tokenizer_that_cannot_read_app_c_drops_it_and_says_why():
    reading = instruction_reading(TokenizerOnly(build_word_tokenizer(DEFAULT_WORDS)), APP_C, "paper")
    assert reading.words == 30 and len(reading.unread) == 24
    assert reading.dropped
    assert readable_instruction(APP_C, reading) == ""
    assert reading.note() == ("the LLM's tokenizer cannot read 24 of 30 words of App. C's "
                              "instruction (e.g. 'Please', 'generate', 'prompt', 'that'): "
                              "searched with no instruction")


def test_a_few_unread_words_keep_the_instruction_and_are_named():
    pieces = re.findall(r"\w+|[^\w\s]", APP_C)  # the word tokenizer's split ("text", "-", ...)
    known = [w for w in pieces if w not in ("generates", "gendered", "pronouns")]
    assert len(distinct_words(APP_C)) == 30
    reading = instruction_reading(TokenizerOnly(build_word_tokenizer(known)), APP_C, "paper")
    assert reading.unread == ("generates", "gendered", "pronouns")
    assert not reading.dropped
    assert readable_instruction(APP_C, reading) == APP_C
    assert reading.note() == ("the LLM's tokenizer cannot read 3 of 30 words of App. C's "
                              "instruction ('generates', 'gendered', 'pronouns'): searched with it")


@pytest.mark.parametrize("builder", ["gpt2-style", "llama-chat"])
def test_a_byte_level_bpe_llm_keeps_the_instruction(builder, tmp_path):
    """No unknown token ever comes out of a byte-level BPE; a random-weight LM guesses about
    uniformly (perplexity near its vocabulary size), far from the unreadable mark."""
    from pytest_t2ibias.backends.llm import CausalLM
    from pytest_t2ibias.testing import make_tiny_chat_lm

    if builder == "gpt2-style":  # byte-level BPE trained on other text, as GPT-2's is on its corpus
        reading = instruction_reading(
            TokenizerOnly(train_text_tokenizer(["a photo of a doctor"] * 10, vocab_size=300)),
            APP_C, "paper")
        assert reading.perplexity is None
    else:
        llm = CausalLM.from_pretrained(make_tiny_chat_lm(tmp_path / "chat"), device="cpu",
                                       offline=True)
        reading = instruction_reading(llm, APP_C, "paper")
        assert reading.times_uniform is not None and 0.5 < reading.times_uniform < 2
    assert reading.unread == () and not reading.dropped and reading.note() == ""
    assert readable_instruction(APP_C, reading) == APP_C


def test_toy_lm_reads_app_c_far_worse_than_a_uniform_guess_and_searches_without_it():
    """toy-lm's byte-level BPE spells every word of App. C in pieces (no unknown token), but the
    GPT-2 behind it learned the toy world's prompts only: it reads App. C at a perplexity ~80x
    its 766 tokens' uniform guess, and continued it with one off-topic prompt for every search."""
    from pytest_t2ibias.backends.llm import CausalLM

    llm = CausalLM.from_pretrained(TOY_LM, device="cpu", offline=True)
    reading = instruction_reading(llm, APP_C, "paper")
    assert reading.unread == () and reading.vocabulary == 766
    assert reading.times_uniform is not None and reading.times_uniform > 50
    assert reading.dropped and readable_instruction(APP_C, reading) == ""
    assert reading.note().startswith("the LLM reads App. C's instruction at perplexity ")
    assert reading.note().endswith("searched with no instruction")
    # the toy world's own words it reads well: no reason to drop those
    own = instruction_reading(llm, "a photo of a person working as a doctor", "custom")
    assert not own.dropped and own.note() == ""


def test_the_reading_round_trips_through_the_lock_entry():
    reading = InstructionReading("paper", 30, ("Please", "prompt"), perplexity=62606.9,
                                 vocabulary=766)
    stored = reading.to_dict()
    assert stored["dropped"] is True
    assert InstructionReading.from_dict(stored) == reading
    assert InstructionReading.from_dict(stored).note() == reading.note()
    assert "'Please', 'prompt'" in reading.note() and "82x" in reading.note()
