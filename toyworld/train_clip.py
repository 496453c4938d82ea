"""A toy CLIP for the toy world: the zero-shot VQA backend of the plugin's suites.

The plugin's contrastive answerer compares each image with one statement per choice
("a photo of a female person" vs "a photo of a male person") and takes the softmax of
``logit_scale * cosine``. So besides the world's own captions ("a photo of an old farmer
working outdoors"), the model is trained on generic statements about a *person* or an
*object* naming one or two attribute values, on "a photo of a person" vs "a photo of an
object" (the person filter) and on ENTIGEN's "a photo of a person who looks like a man".
Each step draws one caption form at random per image, so every form is seen every epoch.

Images are rendered with every attribute drawn uniformly and independently (the evaluator must
carry none of the world's planted biases), and mildly degraded like the classifiers' images.

A caption is true of many images (every old person fits "a photo of an old person"), so the
contrastive loss uses every true pair in the batch as a positive (a multi-positive InfoNCE),
not just the image a caption was drawn for.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from pytest_t2ibias.testing.tokenizer import build_word_tokenizer
from toyworld.sample import caption_for, world_vocabulary
from toyworld.spec import World
from toyworld.train_classifiers import (
    HELD_OUT_STREAM,
    IMAGE_SIZE,
    PIXEL_MEAN,
    PIXEL_STD,
    TRAIN_STREAM,
    degrade,
    normalize,
    render_balanced,
    to_unit_tensor,
)

logger = logging.getLogger(__name__)

GENERIC_NOUN = {"person": "person", "object": "object"}
LOOKS_LIKE = {"male": "a man", "female": "a woman"}  # ENTIGEN's gender statements
EXTRA_WORDS = ("person", "object", "who", "looks", "like", "man", "woman")
MAX_WORDS = 32

# 4px patches: the mouth that carries emotion is ~3px wide; 8px patches read every axis but that one.
VISION = {"image_size": IMAGE_SIZE, "patch_size": 4, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4}
TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4, "max_position_embeddings": MAX_WORDS}
PROJECTION_DIM = 64
# Attribute heads on the image embedding, used in training only (not saved). The contrastive
# loss alone never found the ~3px mouth that carries emotion (zero-shot at chance after 12
# epochs, with 8px or 4px patches); a supervised nudge puts every axis into the embedding,
# and the contrastive loss then aligns the statements with it.
AUXILIARY_WEIGHT = 0.5

# Caption forms and how often each is drawn (people / objects).
PERSON_FORMS = {"caption": 0.3, "one_value": 0.4, "two_values": 0.1, "plain": 0.08, "looks_like": 0.12}
OBJECT_FORMS = {"caption": 0.35, "one_value": 0.45, "plain": 0.2}

FULL_BUDGET = {"images": {"person": 20000, "object": 4000}, "epochs": 12, "batch_size": 128, "learning_rate": 2e-3,
                   "weight_decay": 0.1, "held_out": {"person": 1500, "object": 400}}
QUICK_BUDGET = {"images": {"person": 1000, "object": 200}, "epochs": 1, "batch_size": 64, "learning_rate": 2e-3,
                    "weight_decay": 0.1, "held_out": {"person": 150, "object": 60}}


# -- statements ----------------------------------------------------------------------------


def statement(world: World, noun: str, named: Mapping[str, str] | None = None) -> str:
    """'a photo of a {before phrases} {noun} {after phrases}', like ``caption_for`` but for any noun.

    ``statement(world, "person", {"age": "old"})`` -> "a photo of an old person";
    ``statement(world, "person", {"environment": "outdoors"})`` -> "a photo of a person working outdoors".
    """
    named = named or {}
    axes = [axis for axis in world.axes.values() if axis.name in named]
    before = [axis.phrases[named[axis.name]] for axis in axes if axis.position == "before"]
    after = [axis.phrases[named[axis.name]] for axis in axes if axis.position == "after"]
    phrase = " ".join([*before, noun])
    article = "an" if phrase[0].lower() in "aeiou" else "a"
    return world.captions.template.format(subject=" ".join([article, phrase, *after]))


def recommended_statements(world: World) -> dict[str, dict[str, str]]:
    """The statement per axis value the suites should use with this CLIP (axis -> value -> text)."""
    return {
        axis.name: {value: statement(world, GENERIC_NOUN[axis.applies_to], {axis.name: value}) for value in axis.values}
        for axis in world.axes.values()
    }


def person_filter_statements(world: World) -> dict[str, str]:
    return {"person": statement(world, "person"), "object": statement(world, "object")}


def looks_like_statement(world: World, value: str) -> str:
    return world.captions.template.format(subject=f"a person who looks like {LOOKS_LIKE[value]}")


class CaptionSampler:
    """Draws one caption per image and records what it claims, to find every true pair."""

    def __init__(self, world: World, kinds: list[str], subjects: list[str], axes: list[str]):
        self.world = world
        self.kinds, self.subjects, self.axes = kinds, subjects, axes
        self.has_looks_like = "gender" in world.axes and set(world.axes["gender"].values) <= set(LOOKS_LIKE)

    def draw(self, kind: str, subject: str, attributes: Mapping[str, str], rng: np.random.Generator) -> tuple[str, np.ndarray]:
        """A caption true of the image, and its claims: [kind, subject, *axes] indices, -1 = not claimed."""
        forms = dict(PERSON_FORMS if kind == "person" else OBJECT_FORMS)
        if not self.has_looks_like:
            forms.pop("looks_like", None)
        names, p = list(forms), np.array(list(forms.values()))
        form = names[rng.choice(len(names), p=p / p.sum())]
        own_axes = [name for name in attributes]
        claims = np.full(2 + len(self.axes), -1)
        claims[0] = self.kinds.index(kind)

        def pick(k: int) -> dict[str, str]:
            chosen = rng.choice(len(own_axes), size=min(k, len(own_axes)), replace=False)
            return {own_axes[i]: attributes[own_axes[i]] for i in sorted(chosen)}

        if form == "caption":  # the world's caption: the subject plus 0-3 named values, maybe a modifier
            named = pick(int(rng.integers(0, 4)))
            modifiers = self.world.modifiers_for(subject)
            modifier = (modifiers[rng.integers(len(modifiers))].text(subject),) if modifiers and rng.random() < 0.2 else ()
            text = caption_for(self.world, subject, named, modifier)
            claims[1] = self.subjects.index(subject)
        elif form == "looks_like":
            named = {"gender": attributes["gender"]}
            text = looks_like_statement(self.world, attributes["gender"])
        else:
            named = pick({"plain": 0, "one_value": 1, "two_values": 2}[form])
            text = statement(self.world, GENERIC_NOUN[kind], named)
        for name, value in named.items():
            claims[2 + self.axes.index(name)] = self.world.axes[name].values.index(value)
        return text, claims


def true_pairs(image_facts: np.ndarray, claims: np.ndarray) -> torch.Tensor:
    """(images, captions) 1.0 where every claim of the caption holds for the image."""
    holds = (claims[None, :, :] == -1) | (claims[None, :, :] == image_facts[:, None, :])
    return torch.from_numpy(holds.all(axis=-1).astype(np.float32))


def multi_positive_loss(logits: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE whose target spreads evenly over every true pair."""
    image_to_text = -(positives / positives.sum(1, keepdim=True) * logits.log_softmax(1)).sum(1).mean()
    text_to_image = -(positives / positives.sum(0, keepdim=True) * logits.log_softmax(0)).sum(0).mean()
    return (image_to_text + text_to_image) / 2


# -- model ---------------------------------------------------------------------------------


def build_tokenizer(world: World):
    return build_word_tokenizer([*world_vocabulary(world), *EXTRA_WORDS], model_max_length=MAX_WORDS)


def build_model(tokenizer, seed: int):
    from transformers import CLIPConfig, CLIPModel

    text_config = dict(
        TEXT,
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,  # pooling reads the first <eos>; must not be 2
    )
    torch.manual_seed(seed)
    return CLIPModel(CLIPConfig(text_config=text_config, vision_config=VISION, projection_dim=PROJECTION_DIM))


def build_processor(tokenizer):
    from transformers import CLIPImageProcessor, CLIPProcessor

    image_processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_normalize=True,
        image_mean=list(PIXEL_MEAN),
        image_std=list(PIXEL_STD),
    )
    return CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer)


def _features(output) -> torch.Tensor:
    """transformers 5 returns a model output whose ``pooler_output`` holds the projected features."""
    return output if isinstance(output, torch.Tensor) else output.pooler_output


# -- training ------------------------------------------------------------------------------


def render_pool(world: World, budget: dict, seed: tuple[int, ...]) -> tuple[np.ndarray, list[tuple[str, str, dict[str, str]]]]:
    """Balanced renders of every kind, with (kind, subject, attributes) per image."""
    all_images, facts = [], []
    for kind, n in budget.items():
        axes = [axis for axis in world.axes.values() if axis.applies_to == kind]
        subjects = [name for name, s in world.subjects.items() if s.kind == kind]
        if not axes or not subjects or n == 0:
            continue
        renders = render_balanced(world, kind, n, seed=(*seed, int(kind == "object")))
        all_images.append(renders.images)
        for i in range(n):
            attributes = {axis.name: axis.values[renders.labels[axis.name][i]] for axis in axes}
            facts.append((kind, renders.subjects[i], attributes))
    return np.concatenate(all_images), facts


def train_clip(world: World, out_dir: str | Path, *, seed: int = 0, quick: bool = False) -> dict:
    """Train and save ``out_dir/toy-clip``; returns the configuration and zero-shot accuracies."""
    budget = QUICK_BUDGET if quick else FULL_BUDGET
    started = time.perf_counter()
    tokenizer = build_tokenizer(world)
    model = build_model(tokenizer, seed)
    steps, losses = fit(model, tokenizer, world, budget, seed)
    wall_s = time.perf_counter() - started

    clip_dir = Path(out_dir) / "toy-clip"
    save(model, tokenizer, clip_dir)
    zero_shot = zero_shot_accuracy(clip_dir, world, budget["held_out"], seed)
    report = {
        "architecture": "CLIPModel",
        "vision": VISION,
        "text": TEXT,
        "projection_dim": PROJECTION_DIM,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocabulary": len(tokenizer),
        "caption_forms": {"person": PERSON_FORMS, "object": OBJECT_FORMS},
        "loss": f"multi-positive symmetric InfoNCE + {AUXILIARY_WEIGHT} x attribute cross-entropy (heads dropped)",
        "budget": budget,
        "seed": seed,
        "steps": steps,
        "final_loss": float(np.mean(losses[-20:])),
        "logit_scale": model.logit_scale.exp().item(),
        "wall_s": round(wall_s, 1),
        "recommended_statements": recommended_statements(world),
        "person_filter_statements": person_filter_statements(world),
        "zero_shot": zero_shot,
    }
    (clip_dir / "training.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


CONTINUE_BUDGET = {"images": {"person": 8000, "object": 6000}, "epochs": 4, "batch_size": 128, "learning_rate": 5e-4,
                   "weight_decay": 0.1, "held_out": {"person": 1500, "object": 600}}


def continue_clip(world: World, clip_dir: str | Path, *, seed: int = 1, budget: dict | None = None) -> dict:
    """Train the toy CLIP in ``clip_dir`` further on an edited world, in place (a new axis).

    Words the world adds are appended to the tokenizer (old ids kept) and the text embeddings
    grow to match, so every statement the model read means what it meant; ``training.json``
    keeps the from-scratch record and lists this run under ``continued``.
    """
    from transformers import AutoProcessor, CLIPModel

    from pytest_t2ibias.testing.tokenizer import extend_word_tokenizer

    budget = budget or CONTINUE_BUDGET
    clip_dir = Path(clip_dir)
    started = time.perf_counter()
    model = CLIPModel.from_pretrained(clip_dir, local_files_only=True)
    tokenizer = AutoProcessor.from_pretrained(clip_dir, local_files_only=True).tokenizer
    added = sorted(set(world_vocabulary(world)) - set(tokenizer.get_vocab()))
    if added:
        tokenizer = extend_word_tokenizer(tokenizer, added)
        model.text_model.embeddings.token_embedding = _grown(model.text_model.embeddings.token_embedding, len(tokenizer))
        model.config.text_config.vocab_size = len(tokenizer)
    steps, losses = fit(model, tokenizer, world, budget, seed)
    save(model, tokenizer, clip_dir)
    record = json.loads((clip_dir / "training.json").read_text())
    record.setdefault("continued", []).append({
        "world": world.name, "added_words": added, "budget": budget, "seed": seed, "steps": steps,
        "final_loss": float(np.mean(losses[-20:])), "wall_s": round(time.perf_counter() - started, 1),
        "zero_shot": zero_shot_accuracy(clip_dir, world, budget["held_out"], seed),
    })
    record["vocabulary"] = len(tokenizer)
    record["recommended_statements"] = recommended_statements(world)
    (clip_dir / "training.json").write_text(json.dumps(record, indent=2) + "\n")
    return record["continued"][-1]


def _grown(embedding: torch.nn.Embedding, size: int) -> torch.nn.Embedding:
    """``embedding`` with rows appended up to ``size``, new rows at the old rows' mean."""
    grown = torch.nn.Embedding(size, embedding.embedding_dim)
    with torch.no_grad():
        grown.weight[:embedding.num_embeddings] = embedding.weight
        grown.weight[embedding.num_embeddings:] = embedding.weight.mean(0)
    return grown


def save(model, tokenizer, clip_dir: Path) -> None:
    model.save_pretrained(clip_dir, safe_serialization=True)
    processor = build_processor(tokenizer)
    processor.save_pretrained(clip_dir)
    processor.image_processor.save_pretrained(clip_dir)  # preprocessor_config.json, for older loaders


def fit(model, tokenizer, world: World, budget: dict, seed: int) -> tuple[int, list[float]]:
    """Train ``model`` on balanced renders of ``world`` (``budget``); returns steps and losses."""
    images, facts = render_pool(world, budget["images"], seed=(seed, TRAIN_STREAM))
    pixels = to_unit_tensor(images)
    kinds = sorted({kind for kind, _, _ in facts})
    subjects, axes = list(world.subjects), list(world.axes)
    sampler = CaptionSampler(world, kinds, subjects, axes)
    image_facts = np.array([
        [kinds.index(kind), subjects.index(subject), *[world.axes[a].values.index(attributes[a]) if a in attributes else -2 for a in axes]]
        for kind, subject, attributes in facts
    ])

    attribute_heads = torch.nn.ModuleDict({name: torch.nn.Linear(PROJECTION_DIM, len(world.axes[name].values)) for name in axes})
    attribute_targets = torch.from_numpy(image_facts[:, 2:])  # -2 where the axis does not apply

    rng = np.random.default_rng((seed, TRAIN_STREAM, 1))
    generator = torch.Generator().manual_seed(seed)
    batch_size, epochs = budget["batch_size"], budget["epochs"]
    steps = epochs * (len(pixels) // batch_size)
    parameters = [*model.parameters(), *attribute_heads.parameters()]
    optimizer = torch.optim.AdamW(parameters, lr=budget["learning_rate"], weight_decay=budget["weight_decay"])
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=budget["learning_rate"], total_steps=steps, pct_start=0.1)
    model.train()
    losses = []
    for epoch in range(epochs):
        order = torch.randperm(len(pixels), generator=generator).numpy()
        for start in range(0, len(order) - batch_size + 1, batch_size):
            batch = order[start:start + batch_size]
            drawn = [sampler.draw(*facts[i], rng) for i in batch]
            texts = tokenizer([text for text, _ in drawn], padding=True, return_tensors="pt")
            positives = true_pairs(image_facts[batch], np.stack([claims for _, claims in drawn]))
            image_embeds = _features(model.get_image_features(pixel_values=normalize(degrade(pixels[batch], generator))))
            text_embeds = _features(model.get_text_features(input_ids=texts["input_ids"], attention_mask=texts["attention_mask"]))
            image_features = torch.nn.functional.normalize(image_embeds, dim=-1)
            text_features = torch.nn.functional.normalize(text_embeds, dim=-1)
            logits = model.logit_scale.exp().clamp(max=100) * image_features @ text_features.T
            auxiliary = sum(
                torch.nn.functional.cross_entropy(head(image_embeds), attribute_targets[batch, i], ignore_index=-2)
                for i, head in enumerate(attribute_heads.values())
                if (attribute_targets[batch, i] >= 0).any()
            ) / len(attribute_heads)
            loss = multi_positive_loss(logits, positives) + AUXILIARY_WEIGHT * auxiliary
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        logger.info("toy-clip: epoch %d/%d, loss %.3f, logit scale %.1f", epoch + 1, epochs, np.mean(losses[-50:]), model.logit_scale.exp().item())
    model.eval()
    return steps, losses


# -- evaluation ----------------------------------------------------------------------------


class ZeroShot:
    """A saved toy CLIP scoring images against statements, as the plugin's answerer does."""

    def __init__(self, clip_dir: str | Path):
        from transformers import AutoProcessor, CLIPModel

        self.model = CLIPModel.from_pretrained(clip_dir, local_files_only=True).eval()
        self.processor = AutoProcessor.from_pretrained(clip_dir, local_files_only=True)

    @torch.no_grad()
    def image_features(self, images: np.ndarray) -> torch.Tensor:
        inputs = self.processor(images=[Image.fromarray(image) for image in images], return_tensors="pt")
        return torch.nn.functional.normalize(_features(self.model.get_image_features(pixel_values=inputs["pixel_values"])), dim=-1)

    @torch.no_grad()
    def text_features(self, statements: list[str]) -> torch.Tensor:
        inputs = self.processor(text=statements, padding=True, return_tensors="pt")
        return torch.nn.functional.normalize(_features(self.model.get_text_features(**inputs)), dim=-1)

    def probabilities(self, image_features: torch.Tensor, statements: list[str]) -> torch.Tensor:
        logits = self.model.logit_scale.exp() * image_features @ self.text_features(statements).T
        return logits.softmax(-1)


def statement_templates(world: World) -> dict[str, callable]:
    """Ways to phrase "this image has ``axis`` = ``value``" (for an image of ``subject``)."""
    return {
        "generic": lambda axis, value, subject: statement(world, GENERIC_NOUN[world.axes[axis].applies_to], {axis: value}),
        "subject": lambda axis, value, subject: caption_for(world, subject, {axis: value}),
        "bare_value": lambda axis, value, subject: f"a photo of a {value}",  # the plugin's default template
    }


def zero_shot_accuracy(clip_dir: str | Path, world: World, held_out: Mapping[str, int], seed: int) -> dict:
    """Per axis and statement template, the share of fresh renders whose true statement wins."""
    scorer = ZeroShot(clip_dir)
    templates = statement_templates(world)
    result: dict = {"templates": {}, "person_filter": None, "looks_like_gender": None}
    features_by_kind = {}
    for kind, n in held_out.items():
        subjects = [name for name, s in world.subjects.items() if s.kind == kind]
        axes = [axis for axis in world.axes.values() if axis.applies_to == kind]
        if not subjects or not axes:
            continue
        renders = render_balanced(world, kind, n, seed=(seed, HELD_OUT_STREAM, 7))
        labels = renders.labels
        features = scorer.image_features(renders.images)
        features_by_kind[kind] = features
        for name, template in templates.items():
            scores = result["templates"].setdefault(name, {})
            for axis in axes:
                correct = np.zeros(n, dtype=bool)
                for subject in subjects:  # the subject-specific template needs one set per subject
                    rows = np.flatnonzero(renders.subjects == subject)
                    probs = scorer.probabilities(features[rows], [template(axis.name, v, subject) for v in axis.values])
                    correct[rows] = probs.argmax(-1).numpy() == labels[axis.name][rows]
                scores[axis.name] = float(correct.mean())
        if kind == "person" and "gender" in labels and set(world.axes["gender"].values) <= set(LOOKS_LIKE):
            gender = world.axes["gender"]
            probs = scorer.probabilities(features, [looks_like_statement(world, v) for v in gender.values])
            result["looks_like_gender"] = float((probs.argmax(-1).numpy() == labels["gender"]).mean())
    if set(features_by_kind) == {"person", "object"}:
        filter_statements = list(person_filter_statements(world).values())
        is_person = [scorer.probabilities(features_by_kind[kind], filter_statements)[:, 0] > 0.5 for kind in ("person", "object")]
        result["person_filter"] = {"person_kept": float(is_person[0].float().mean()), "object_dropped": float((~is_person[1]).float().mean())}
    result["images"] = dict(held_out)
    return result
