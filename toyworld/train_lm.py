"""Two tiny causal LMs of the toy world's prompt language, for BGPS prompt search and perplexity.

BGPS (seeds/001) continues a model prompt ("a photo of a person working as a") with an LM and
scores the candidates' naturalness by log p_LM; its evaluation measures the found prompts'
perplexity under a *different* LM. So two models are trained on the same language with
different architectures and seeds: ``toy-lm`` (GPT-2) searches, ``toy-lm-eval`` (Llama) judges.

The language: the world's captions as ``sample_people`` draws them ("a photo of an old farmer
working outdoors"), and BGPS-style continuations ("a photo of a person working as a nurse
looking happy on a quiet afternoon"), half each.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import torch

from pytest_t2ibias.testing.tokenizer import build_word_tokenizer
from toyworld.sample import sample_people, world_vocabulary
from toyworld.spec import World

logger = logging.getLogger(__name__)

BGPS_PREFIX = "a photo of a person working as"
EXTRA_WORDS = ("person", "as")
MAX_TOKENS = 32
TRAIN_STREAM, HELD_OUT_STREAM = 1, 2

MODELS = {
    "toy-lm": {
        "architecture": "GPT2LMHeadModel",
        "config": {"n_positions": MAX_TOKENS, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": 256},
        "seed_offset": 0,
    },
    "toy-lm-eval": {
        "architecture": "LlamaForCausalLM",
        "config": {"hidden_size": 48, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "max_position_embeddings": MAX_TOKENS, "tie_word_embeddings": True},
        "seed_offset": 1000,
    },
}
FULL_BUDGET = {"texts": 24000, "epochs": 4, "batch_size": 64, "learning_rate": 3e-3, "weight_decay": 0.01, "held_out": 2000}
QUICK_BUDGET = {"texts": 1000, "epochs": 1, "batch_size": 32, "learning_rate": 3e-3, "weight_decay": 0.01, "held_out": 200}


# -- corpus --------------------------------------------------------------------------------


def bgps_continuation(world: World, subject: str, rng: np.random.Generator) -> str:
    """"a photo of a person working as a {subject}" + 0-2 after-noun phrases + maybe a modifier."""
    article = "an" if subject[0] in "aeiou" else "a"
    after_axes = [axis for axis in world.axes_of(subject) if axis.position == "after"]
    chosen = rng.choice(len(after_axes), size=min(int(rng.integers(0, 3)), len(after_axes)), replace=False)
    phrases = [after_axes[i].phrases[after_axes[i].values[rng.integers(len(after_axes[i].values))]] for i in sorted(chosen)]
    modifiers = world.modifiers_for(subject)
    if modifiers and rng.random() < 0.3:
        phrases.append(modifiers[rng.integers(len(modifiers))].text(subject))
    return " ".join([BGPS_PREFIX, article, subject, *phrases])


def prompt_corpus(world: World, n: int, seed: tuple[int, ...]) -> list[str]:
    """``n`` texts: half world captions, half BGPS-style continuations for person subjects, shuffled."""
    rng = np.random.default_rng(seed)
    captions = [record.caption for record in sample_people(world, n - n // 2, seed=int(rng.integers(2**31 - 1)))]
    people = [name for name, subject in world.subjects.items() if subject.kind == "person"]
    continuations = [bgps_continuation(world, people[rng.integers(len(people))], rng) for _ in range(n // 2)]
    texts = captions + continuations
    return [texts[i] for i in rng.permutation(len(texts))]


# -- model ---------------------------------------------------------------------------------


def build_tokenizer(world: World):
    return build_word_tokenizer([*world_vocabulary(world), *EXTRA_WORDS], model_max_length=MAX_TOKENS)


def build_model(name: str, tokenizer, seed: int):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    spec = MODELS[name]
    special = {"vocab_size": len(tokenizer), "bos_token_id": tokenizer.bos_token_id,
                   "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}
    torch.manual_seed(seed + spec["seed_offset"])
    if spec["architecture"] == "GPT2LMHeadModel":
        return GPT2LMHeadModel(GPT2Config(**spec["config"], **special))
    return LlamaForCausalLM(LlamaConfig(**spec["config"], **special))


def encode(tokenizer, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``<bos> words <eos>`` right-padded; labels are -100 on padding so it is never learned."""
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    return batch["input_ids"], batch["attention_mask"], labels


@torch.no_grad()
def token_log_likelihoods(model, tokenizer, texts: list[str], batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Per text: summed log-probability of every token after ``<bos>``, and how many tokens."""
    sums, counts = [], []
    for start in range(0, len(texts), batch_size):
        input_ids, attention_mask, _ = encode(tokenizer, texts[start:start + batch_size])
        logprobs = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].log_softmax(-1)
        token = logprobs.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
        mask = attention_mask[:, 1:].float()
        sums.append((token * mask).sum(-1).numpy())
        counts.append(mask.sum(-1).numpy())
    return np.concatenate(sums), np.concatenate(counts)


def corpus_perplexity(model, tokenizer, texts: list[str]) -> float:
    """exp of the mean negative log-likelihood per token over all ``texts``."""
    sums, counts = token_log_likelihoods(model, tokenizer, texts)
    return float(np.exp(-sums.sum() / counts.sum()))


# -- training ------------------------------------------------------------------------------


def train_one(name: str, tokenizer, texts: list[str], budget: dict, seed: int):
    model = build_model(name, tokenizer, seed)
    generator = torch.Generator().manual_seed(seed + MODELS[name]["seed_offset"])
    batch_size, epochs = budget["batch_size"], budget["epochs"]
    steps = epochs * (len(texts) // batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=budget["learning_rate"], weight_decay=budget["weight_decay"])
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=budget["learning_rate"], total_steps=steps, pct_start=0.1)
    model.train()
    losses = []
    for epoch in range(epochs):
        order = torch.randperm(len(texts), generator=generator).tolist()
        for start in range(0, len(order) - batch_size + 1, batch_size):
            input_ids, attention_mask, labels = encode(tokenizer, [texts[i] for i in order[start:start + batch_size]])
            loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        logger.info("%s: epoch %d/%d, loss %.3f", name, epoch + 1, epochs, np.mean(losses[-50:]))
    return model.eval(), steps, float(np.mean(losses[-50:]))


def train_lms(world: World, out_dir: str | Path, *, seed: int = 0, quick: bool = False) -> dict:
    """Train and save ``out_dir/toy-lm`` and ``out_dir/toy-lm-eval``; returns configs and perplexities."""
    budget = QUICK_BUDGET if quick else FULL_BUDGET
    tokenizer = build_tokenizer(world)
    texts = prompt_corpus(world, budget["texts"], seed=(seed, TRAIN_STREAM))
    held_out = prompt_corpus(world, budget["held_out"], seed=(seed, HELD_OUT_STREAM))
    # A sanity floor: the same texts with their words shuffled must be far less likely.
    rng = np.random.default_rng((seed, HELD_OUT_STREAM, 1))
    shuffled = [" ".join(rng.permutation(text.split())) for text in held_out]
    report: dict = {"corpus": {"texts": len(texts), "held_out": len(held_out), "bgps_prefix": BGPS_PREFIX},
                    "vocabulary": len(tokenizer), "budget": budget, "seed": seed, "models": {}}
    for name, spec in MODELS.items():
        started = time.perf_counter()
        model, steps, final_loss = train_one(name, tokenizer, texts, budget, seed)
        wall_s = time.perf_counter() - started
        model_dir = Path(out_dir) / name
        model.save_pretrained(model_dir, safe_serialization=True)
        tokenizer.save_pretrained(model_dir)
        figures = {
            "architecture": spec["architecture"],
            "config": spec["config"],
            "parameters": sum(p.numel() for p in model.parameters()),
            "seed": seed + spec["seed_offset"],
            "steps": steps,
            "final_loss": final_loss,
            "wall_s": round(wall_s, 1),
            "held_out_perplexity": corpus_perplexity(model, tokenizer, held_out),
            "shuffled_perplexity": corpus_perplexity(model, tokenizer, shuffled),
        }
        (model_dir / "training.json").write_text(json.dumps({**figures, "budget": budget}, indent=2) + "\n")
        report["models"][name] = figures
    return report
