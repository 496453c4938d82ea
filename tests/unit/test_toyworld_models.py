"""The committed toy judges load as the plugin loads them and give sane answers on fresh renders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from toyworld import caption_for, load_world, render_image, sample_people
from toyworld.render import PERSON_DEFAULTS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REBUILD = "build it with `python -m toyworld build --out fixtures`"


@pytest.fixture(scope="module")
def world():
    return load_world()


def fixture_dir(name: str) -> Path:
    path = FIXTURES / name
    if not (path / "config.json").exists():
        pytest.skip(f"{path} is not built; {REBUILD}")
    return path


def clear_case(world, axis, value: str, seed: int) -> Image.Image:
    """A render where only ``axis`` varies: every other attribute at the renderer's default."""
    kind = world.axes[axis].applies_to
    subject = next(s for s in world.subjects.values() if s.kind == kind)
    attributes = {**(PERSON_DEFAULTS if kind == "person" else {}), axis: value}
    return render_image(attributes, subject.look, seed=seed)


@pytest.mark.parametrize("axis", list(load_world().axes))
def test_classifier_reads_clear_cases(world, axis):
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    path = fixture_dir(f"classifiers/{axis}")
    model = AutoModelForImageClassification.from_pretrained(path, local_files_only=True).eval()
    processor = AutoImageProcessor.from_pretrained(path, local_files_only=True)
    values = world.axes[axis].values
    assert [model.config.id2label[i] for i in range(len(values))] == list(values)

    truth = [value for value in values for _ in range(4)]
    images = [clear_case(world, axis, value, seed=1000 + i) for i, value in enumerate(truth)]
    with torch.no_grad():
        logits = model(**processor(images=images, return_tensors="pt")).logits
    predicted = [model.config.id2label[i] for i in logits.argmax(-1).tolist()]
    assert np.mean([p == t for p, t in zip(predicted, truth)]) >= 0.9, list(zip(truth, predicted))


@pytest.fixture(scope="module")
def clip_and_people(world):
    """The toy CLIP loaded through the Auto classes, and 20 fresh renders of people with their features."""
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer, CLIPModel

    path = fixture_dir("toy-clip")
    model = CLIPModel.from_pretrained(path, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    image_processor = AutoImageProcessor.from_pretrained(path, local_files_only=True)
    assert AutoProcessor.from_pretrained(path, local_files_only=True) is not None
    people = [r for r in sample_people(world, 40, seed=2024) if r.look.kind == "person"][:20]
    images = [render_image(r.attributes, r.look, r.seed) for r in people]
    with torch.no_grad():
        features = model.get_image_features(**image_processor(images=images, return_tensors="pt"))
    features = torch.nn.functional.normalize(getattr(features, "pooler_output", features), dim=-1)
    return model, tokenizer, people, features


PERSON_AXES = [a.name for a in load_world().axes.values() if a.applies_to == "person"]


@pytest.mark.parametrize("axis", PERSON_AXES)
def test_clip_ranks_the_true_statement_first(world, clip_and_people, axis):
    from toyworld.train_clip import recommended_statements

    model, tokenizer, people, image_features = clip_and_people
    statements = recommended_statements(world)[axis]
    with torch.no_grad():
        text_features = model.get_text_features(**tokenizer(list(statements.values()), padding=True, return_tensors="pt"))
    text_features = torch.nn.functional.normalize(getattr(text_features, "pooler_output", text_features), dim=-1)
    chosen = (image_features @ text_features.T).argmax(-1).tolist()
    correct = [world.axes[axis].values[c] == r.attributes[axis] for c, r in zip(chosen, people)]
    assert sum(correct) >= 14, f"{axis}: {sum(correct)}/20 right"


@pytest.mark.parametrize("name", ["toy-lm", "toy-lm-eval"])
def test_lm_prefers_real_captions_to_shuffled_ones(world, name):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = fixture_dir(name)
    from toyworld.train_lm import token_log_likelihoods

    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    assert tokenizer.bos_token and tokenizer.eos_token and tokenizer.pad_token

    captions = [
        caption_for(world, "farmer", {"age": "old", "environment": "outdoors"}),
        caption_for(world, "nurse", {"gender": "male"}),
        caption_for(world, "musician", modifiers=("on a quiet afternoon",)),
        "a photo of a person working as a doctor",
    ]
    rng = np.random.default_rng(0)
    shuffled = [" ".join(rng.permutation(c.split())) for c in captions]
    real, _ = token_log_likelihoods(model, tokenizer, captions)
    scrambled, _ = token_log_likelihoods(model, tokenizer, shuffled)
    assert (real > scrambled).all(), (real, scrambled)


@pytest.mark.parametrize("name", ["toy-clip", "classifiers/gender"])
def test_image_processor_reproduces_training_inputs(world, name):
    """The saved processor turns a 32x32 render into exactly the tensor the model was trained on."""
    from transformers import AutoImageProcessor

    from toyworld.train_classifiers import normalize, to_unit_tensor

    processor = AutoImageProcessor.from_pretrained(fixture_dir(name), local_files_only=True)
    image = np.asarray(clear_case(world, "gender", "female", seed=5))
    pixels = processor(images=[Image.fromarray(image)], return_tensors="pt")["pixel_values"]
    assert torch.allclose(pixels, normalize(to_unit_tensor(image[None])), atol=1e-5)
