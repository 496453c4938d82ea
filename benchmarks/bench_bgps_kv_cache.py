"""BGPS' beam search with and without the LLM's context cached (issue #25): the speed ratio.

    OMP_NUM_THREADS=1 python benchmarks/bench_bgps_kv_cache.py [--repeat 3] [--json out.json]

Each search is the kind's default shape (beam 5, expansion 5, 10 new tokens, 5 searches) with
a probe that costs nothing (a hash of the text), so the time is the LLM's alone. Three LLMs:
fixtures/toy-lm without an instruction (the context is the 9-token model prompt), the same
with a short instruction before it (toy-lm has 32 positions: 21 context tokens + 10 new; App.
C's instruction does not fit), and a random Llama built from a config (4 layers, hidden 256,
128 positions) with App. C's instruction (43 context tokens). With and
without the cache are run in interleaved pairs; a time is the median, a ratio the median of
the pairs' ratios. The prompts found must be identical both ways (checked every run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import torch

from pytest_t2ibias.backends.llm import CausalLM
from pytest_t2ibias.backends.token_lm import BeamSearchLM
from pytest_t2ibias.kinds.no_bgps_prompt_exceeds import NoBGPSPromptExceedsParams, search_settings
from pytest_t2ibias.locks.bgps import INSTRUCTION
from pytest_t2ibias.methods.bgps import SearchSettings, bgps_search
from pytest_t2ibias.params import build

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SHORT_INSTRUCTION = "Please generate a prompt that generates a photo of a person."


def free_probe(prompts):
    return np.array([0.05 + 0.9 * (zlib.crc32(p.encode()) % 1000) / 1000 for p in prompts])


def random_llama(directory: Path, positions: int = 128) -> Path:
    """A 4-layer random Llama over toy-lm's word tokenizer, from a config (nothing downloaded)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(FIXTURES / "toy-lm")
    tokenizer.model_max_length = positions
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=256, intermediate_size=768, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=positions,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id))
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


def search_seconds(lm: CausalLM, instruction: str, kv_cache: bool, settings: SearchSettings) -> tuple[float, list]:
    adapter = BeamSearchLM(lm, instruction=instruction, kv_cache=kv_cache)
    lm._prefix_cache = None  # each run pays for its own context
    started = time.perf_counter()
    found = bgps_search(adapter, free_probe, settings)
    return time.perf_counter() - started, found.texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    # A check's search at beam 5 (the kind's defaults for every other setting).
    settings = search_settings(build(NoBGPSPromptExceedsParams, {
        "target": {"axis": "gender", "value": "male"}, "threshold": 0.5, "beam": 5, "expansion": 5,
        "max_new_tokens": 10, "prompts": 5}))
    toy = CausalLM.from_pretrained(FIXTURES / "toy-lm", device="cpu", dtype="float32", offline=True)
    with tempfile.TemporaryDirectory() as tmp:
        llama = CausalLM.from_pretrained(random_llama(Path(tmp) / "llama"), device="cpu", dtype="float32",
                                         offline=True)
        cases = {"toy-lm (GPT-2, 2 layers), no instruction": (toy, ""),
                 "toy-lm (GPT-2, 2 layers), short instruction": (toy, SHORT_INSTRUCTION),
                 "random Llama (4 layers, hidden 256), App. C instruction": (llama, INSTRUCTION)}
        report = {"settings": {"beam": 5, "expansion": 5, "max_new_tokens": 10, "prompts": 5,
                               "repeat": args.repeat}, "cases": {}}
        for name, (lm, instruction) in cases.items():
            context = len(BeamSearchLM(lm, instruction=instruction).encode_prefix(settings.model_prompt))
            times = {True: [], False: []}
            ratios = []
            for _ in range(args.repeat):
                pair = {}
                for kv in (False, True):
                    seconds, texts = search_seconds(lm, instruction, kv, settings)
                    times[kv].append(seconds)
                    pair[kv] = (seconds, texts)
                if pair[True][1] != pair[False][1]:
                    raise SystemExit(f"{name}: the cache changed the prompts found: {pair[True][1]} vs {pair[False][1]}")
                ratios.append(pair[False][0] / pair[True][0])
            row = {"context_tokens": context, "without_s": statistics.median(times[False]),
                   "with_s": statistics.median(times[True]), "ratio": statistics.median(ratios),
                   "ratio_low": min(ratios), "ratio_high": max(ratios), "pairs": len(ratios)}
            report["cases"][name] = row
            print(f"{name}: context {context} tokens; without cache {row['without_s']:.2f}s, with "
                  f"{row['with_s']:.2f}s: {row['ratio']:.2f}x [{row['ratio_low']:.2f}, {row['ratio_high']:.2f}] "
                  f"over {row['pairs']} pairs; same prompts both ways", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
