"""What the paper's prompt length costs BGPS' search (issue #44): probe calls at the kind's
default ``max_new_tokens`` (10) against the paper protocol's (24).

    OMP_NUM_THREADS=1 python benchmarks/bench_bgps_prompt_length.py

A random 4-layer Llama over toy-lm's word tokenizer, (``bench_bgps_kv_cache``'s, with 256
positions: App. C's instruction takes 120 of toy-lm's tokens),
reads App. C's gender instruction as a prefix; the probe is free (a hash of the text), so the
wall time is the LLM's alone and "candidates scored" is what a real probe pays K UNet forwards
for each. The kind's beam 10 and expansion 10, 3 searches. A random LLM rarely ends a beam, so
every search runs to its limit: the ratio is the worst case's. Prints one line per setting.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_bgps_kv_cache import FIXTURES, free_probe, random_llama

from pytest_t2ibias.backends.llm import CausalLM
from pytest_t2ibias.backends.token_lm import BeamSearchLM
from pytest_t2ibias.kinds.no_bgps_prompt_exceeds import NoBGPSPromptExceedsParams, search_settings
from pytest_t2ibias.methods.bgps import (
    PAPER_MAX_NEW_TOKENS,
    bgps_search,
    paper_instruction,
    prompt_words,
)
from pytest_t2ibias.params import build


def main() -> None:
    torch.set_num_threads(1)
    assert (FIXTURES / "toy-lm").exists()
    with tempfile.TemporaryDirectory() as tmp:
        llama = CausalLM.from_pretrained(random_llama(Path(tmp) / "llama", positions=256), device="cpu",
                                         dtype="float32", offline=True)
        results = {}
        for tokens in (10, PAPER_MAX_NEW_TOKENS):
            settings = search_settings(build(NoBGPSPromptExceedsParams, {
                "target": {"axis": "gender", "value": "male"}, "threshold": 0.5,
                "max_new_tokens": tokens, "prompts": 3}))
            lm = BeamSearchLM(llama, instruction=paper_instruction("gender"), max_new_tokens=tokens)
            started = time.perf_counter()
            found = bgps_search(lm, free_probe, settings)
            seconds = time.perf_counter() - started
            words = prompt_words(found.texts)
            results[tokens] = (found.candidates_scored, seconds)
            print(f"max_new_tokens {tokens}: {found.candidates_scored} candidates scored, "
                  f"{seconds:.1f} s, found prompts {words['min']:.0f} to {words['max']:.0f} words")
        (low, low_s), (high, high_s) = results[10], results[PAPER_MAX_NEW_TOKENS]
        print(f"ratio {PAPER_MAX_NEW_TOKENS}/10: candidates scored x{high / low:.2f}, "
              f"LLM time x{high_s / low_s:.2f}")


if __name__ == "__main__":
    main()
