"""Two tiny causal LMs of the toy world's prompt language, for BGPS prompt search and perplexity.

BGPS (seeds/001) continues a model prompt ("a photo of a person working as a") with an LM and
scores the candidates' naturalness by log p_LM; its evaluation measures the found prompts'
perplexity under a *different* LM. So two models are trained on the same language with
different architectures and seeds: ``toy-lm`` (GPT-2) searches, ``toy-lm-eval`` (Llama) judges.

The language: the world's captions as ``sample_people`` draws them ("a photo of an old farmer
working outdoors"), and BGPS-style continuations ("a photo of a person working as a nurse
looking happy on a quiet afternoon"), half each. ``toy-lm`` also reads OpenBias' questions
(seeds/004 Sec. 3.1) answered as an LLM that knows the world's attributes would: the proposal
prompt, in-context examples and all, followed by a JSON list of the attributes a caption
leaves open, and the "does the caption already say it" question followed by yes or no. It
knows which attributes exist (a mug can be striped), never how often: the shares are the
images' to tell. Proposals are just more text, so it needs a byte-level BPE tokenizer (a JSON
reply decodes as written) and a context the prompt fits in.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import torch

from pytest_t2ibias.methods.openbias import PRESENCE_PROMPT, proposal_prompt
from pytest_t2ibias.testing.tokenizer import build_word_tokenizer, train_text_tokenizer
from toyworld.sample import Record, sample_people, world_vocabulary
from toyworld.spec import Axis, World

logger = logging.getLogger(__name__)

BGPS_PREFIX = "a photo of a person working as"
EXTRA_WORDS = ("person", "as")
MAX_TOKENS = 32
TRAIN_STREAM, HELD_OUT_STREAM = 1, 2

OPENBIAS_TOKENS = 768
"""toy-lm's context: the proposal prompt (~230 tokens) and a person's full reply (~220)."""

MODELS = {
    "toy-lm": {
        "architecture": "GPT2LMHeadModel",
        "config": {"n_positions": OPENBIAS_TOKENS, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": 256},
        "seed_offset": 0,
        "openbias": True,
    },
    "toy-lm-eval": {
        "architecture": "LlamaForCausalLM",
        "config": {"hidden_size": 48, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "max_position_embeddings": MAX_TOKENS, "tie_word_embeddings": True},
        "seed_offset": 1000,
    },
}
FULL_BUDGET = {"texts": 24000, "epochs": 4, "batch_size": 64, "learning_rate": 3e-3, "weight_decay": 0.01, "held_out": 2000,
               "openbias_texts": 4000, "openbias_batch_size": 16}
QUICK_BUDGET = {"texts": 1000, "epochs": 1, "batch_size": 32, "learning_rate": 3e-3, "weight_decay": 0.01, "held_out": 200,
                "openbias_texts": 200, "openbias_batch_size": 8}
OPENBIAS_STREAM = 3


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


def bias_name(axis: Axis) -> str:
    return axis.name.replace("_", " ")


def proposal_reply(world: World, record: Record) -> list[dict]:
    """Every attribute of the subject's kind the caption leaves open, as the in-context
    examples answer: a caption that names the colour is not asked about the colour."""
    noun = "person" if world.subjects[record.subject].kind == "person" else "object"
    return [{"name": bias_name(axis), "classes": list(axis.values),
             "question": f"What is the {bias_name(axis)} of the {noun}?"}
            for axis in world.axes_of(record.subject) if axis.name not in record.named]


def openbias_corpus(world: World, n: int, seed: tuple[int, ...]) -> list[str]:
    """``n`` OpenBias exchanges on world captions: half proposal prompts with their JSON reply,
    half presence questions with their answer (yes on half the captions that name an attribute,
    about a fifth in all)."""
    rng = np.random.default_rng(seed)
    records = sample_people(world, n, seed=int(rng.integers(2**31 - 1)))
    texts = []
    for i, record in enumerate(records):
        if i % 2 == 0:
            texts.append(f"{proposal_prompt(record.caption)} {json.dumps(proposal_reply(world, record))}")
            continue
        named = [axis for axis in world.axes_of(record.subject) if axis.name in record.named]
        open_ = [axis for axis in world.axes_of(record.subject) if axis.name not in record.named]
        pool = named if named and (not open_ or rng.random() < 0.5) else open_
        axis = pool[rng.integers(len(pool))]
        question = PRESENCE_PROMPT.format(caption=record.caption, name=bias_name(axis),
                                          classes=", ".join(axis.values))
        texts.append(f"{question} {'yes' if axis in named else 'no'}")
    return texts


# -- model ---------------------------------------------------------------------------------


def build_tokenizer(world: World, texts: list[str] | None = None):
    """The word tokenizer (``toy-lm-eval``), or a BPE one trained on ``texts`` (``toy-lm``)."""
    if texts is not None:
        return train_text_tokenizer(texts, model_max_length=OPENBIAS_TOKENS)
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


@torch.no_grad()
def openbias_accuracy(model, tokenizer, world: World, n: int, seed: tuple[int, ...]) -> dict:
    """On ``n`` held-out captions, how often the greedy reply to the proposal prompt is the
    expected JSON list exactly, and how often it parses at all (``parse_proposals``)."""
    from pytest_t2ibias.methods.openbias import parse_proposals

    records = sample_people(world, n, seed=int(np.random.default_rng(seed).integers(2**31 - 1)))
    exact = parsed = 0
    for record in records:
        ids = tokenizer(proposal_prompt(record.caption), return_tensors="pt")["input_ids"][:, :-1]  # no <eos>
        output = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                max_new_tokens=OPENBIAS_TOKENS - ids.shape[1],
                                pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        reply = tokenizer.decode(output[0, ids.shape[1]:], skip_special_tokens=True).strip()
        proposals, malformed = parse_proposals(reply)
        parsed += bool(proposals) and not malformed
        exact += proposals == proposal_reply(world, record) and not malformed
    return {"captions": n, "exact": exact, "parsed": parsed}


# -- training ------------------------------------------------------------------------------


def _batches(texts: list[str], batch_size: int, generator: torch.Generator) -> list[list[str]]:
    order = torch.randperm(len(texts), generator=generator).tolist()
    return [[texts[i] for i in order[start:start + batch_size]]
            for start in range(0, len(order) - batch_size + 1, batch_size)]


def train_one(name: str, tokenizer, texts: list[str], budget: dict, seed: int, long_texts: list[str] = ()):
    """``texts`` and ``long_texts`` (OpenBias exchanges, ~30x longer) in batches of one kind,
    so a short caption is never padded to a proposal's length."""
    model = build_model(name, tokenizer, seed)
    generator = torch.Generator().manual_seed(seed + MODELS[name]["seed_offset"])
    batch_size, epochs = budget["batch_size"], budget["epochs"]
    long_batch = budget.get("openbias_batch_size", batch_size)
    steps = epochs * (len(texts) // batch_size + len(long_texts) // long_batch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=budget["learning_rate"], weight_decay=budget["weight_decay"])
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=budget["learning_rate"], total_steps=steps, pct_start=0.1)
    model.train()
    losses = []
    for epoch in range(epochs):
        batches = _batches(texts, batch_size, generator) + _batches(list(long_texts), long_batch, generator)
        for index in torch.randperm(len(batches), generator=generator).tolist():
            input_ids, attention_mask, labels = encode(tokenizer, batches[index])
            loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        logger.info("%s: epoch %d/%d, loss %.3f", name, epoch + 1, epochs, np.mean(losses[-50:]))
    return model.eval(), steps, float(np.mean(losses[-50:]))


def train_lms(world: World, out_dir: str | Path, *, seed: int = 0, quick: bool = False,
              models: tuple[str, ...] = tuple(MODELS), how: str | None = None) -> dict:
    """Train and save ``out_dir/toy-lm`` and ``out_dir/toy-lm-eval`` (or those of ``models``);
    returns configs and perplexities. ``how``: the command that remakes a model ({model} filled
    in), kept in its ``training.json``."""
    budget = QUICK_BUDGET if quick else FULL_BUDGET
    texts = prompt_corpus(world, budget["texts"], seed=(seed, TRAIN_STREAM))
    openbias = openbias_corpus(world, budget["openbias_texts"], seed=(seed, OPENBIAS_STREAM))
    held_out = prompt_corpus(world, budget["held_out"], seed=(seed, HELD_OUT_STREAM))
    # A sanity floor: the same texts with their words shuffled must be far less likely.
    rng = np.random.default_rng((seed, HELD_OUT_STREAM, 1))
    shuffled = [" ".join(rng.permutation(text.split())) for text in held_out]
    report: dict = {"corpus": {"texts": len(texts), "openbias_texts": len(openbias), "held_out": len(held_out),
                               "bgps_prefix": BGPS_PREFIX},
                    "budget": budget, "seed": seed, "models": {}}
    for name in models:
        spec = MODELS[name]
        long_texts = openbias if spec.get("openbias") else []
        tokenizer = build_tokenizer(world, texts + long_texts if long_texts else None)
        started = time.perf_counter()
        model, steps, final_loss = train_one(name, tokenizer, texts, budget, seed, long_texts)
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
            "vocabulary": len(tokenizer),
            **({"how": how.format(model=name)} if how else {}),
        }
        if long_texts:
            figures["openbias_held_out"] = openbias_accuracy(model, tokenizer, world, budget["held_out"] // 20,
                                                             seed=(seed, HELD_OUT_STREAM, 2))
        (model_dir / "training.json").write_text(json.dumps({**figures, "budget": budget}, indent=2) + "\n")
        report["models"][name] = figures
    return report
