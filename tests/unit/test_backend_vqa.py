"""VQA answerers on tiny CLIP and BLIP models, chosen and loaded by ``load_answerer``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from pytest_t2ibias.backends import (
    Answerer,
    ClipAnswerer,
    GenerativeAnswerer,
    load_answerer,
)
from pytest_t2ibias.testing import (
    make_tiny_blip_vqa,
    make_tiny_clip,
    make_tiny_llava,
    torch_threads,
)

CHOICES = ["man", "woman", "child"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (24, 40, 3), dtype=np.uint8)) for _ in range(4)]


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = make_tiny_clip(tmp_path_factory.mktemp("clip") / "tiny-clip")
    return load_answerer(path, device="cpu", offline=True, batch_size=3)


@pytest.fixture(scope="module")
def blip(tmp_path_factory):
    path = make_tiny_blip_vqa(tmp_path_factory.mktemp("blip") / "tiny-blip")
    return load_answerer(path, device="cpu", offline=True, batch_size=3)


def assert_probability_rows(scores, n_images, n_choices):
    assert scores.shape == (n_images, n_choices)
    assert np.all(scores >= 0) and np.all(np.isfinite(scores))
    np.testing.assert_allclose(scores.sum(axis=1), 1.0, atol=1e-9)


def test_clip_config_gives_a_contrastive_answerer(clip):
    assert isinstance(clip, ClipAnswerer) and isinstance(clip, Answerer)
    assert type(clip.model).__name__ == "CLIPModel"


def test_clip_scores_equal_clip_logits_per_image(clip, images):
    scores = clip.score(images, "Who is in the image?", CHOICES)
    assert_probability_rows(scores, len(images), len(CHOICES))

    statements = [f"a photo of a {choice}" for choice in CHOICES]
    inputs = clip.processor(text=statements, images=images, return_tensors="pt", padding=True)
    with torch.no_grad():
        expected = clip.model(**inputs).logits_per_image.softmax(dim=-1).numpy()
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    assert np.ptp(scores[:, 0]) > 1e-3  # the images are told apart


def test_clip_statements_and_template(clip, images):
    given = clip.score(images, "q", CHOICES, statements=["a man", "a woman", "a child"])
    templated = clip.score(images, "q", CHOICES)
    assert not np.allclose(given, templated)
    other_template = ClipAnswerer(
        clip.model, clip.processor, model_fingerprint="m", template="a {choice}", device="cpu"
    )
    np.testing.assert_allclose(other_template.score(images, "q", CHOICES), given, atol=1e-6)
    assert other_template.fingerprint != ClipAnswerer(clip.model, clip.processor, model_fingerprint="m").fingerprint


def test_blip_config_gives_a_generative_answerer(blip):
    assert isinstance(blip, GenerativeAnswerer) and isinstance(blip, Answerer)
    assert type(blip.model).__name__ == "BlipForQuestionAnswering"


def test_blip_scores_are_deterministic_probability_rows(blip, images):
    question = "is there a person in the image"
    scores = blip.score(images, question, ["yes", "no", "a man"])
    assert_probability_rows(scores, len(images), 3)
    np.testing.assert_array_equal(scores, blip.score(images, question, ["yes", "no", "a man"]))
    assert np.ptp(scores[:, 0]) > 1e-3  # answers depend on the image


def test_blip_scores_do_not_depend_on_batching_or_choice_order(blip, images):
    question = "who is in the image"
    batched = blip.score(images, question, CHOICES)
    one_by_one = np.concatenate([blip.score([image], question, CHOICES) for image in images])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-6)
    reordered = blip.score(images, question, CHOICES[::-1])
    np.testing.assert_allclose(reordered[:, ::-1], batched, atol=1e-6)


def test_blip_choice_score_is_mean_token_log_probability(blip, images):
    """Recompute one choice's score by hand: decoder log-probs of its tokens + end token."""
    model, tokenizer = blip.model, blip.tokenizer
    question, choice = "who is in the image", "old man"
    inputs = blip.processor(images=images[:1], text=[question], return_tensors="pt")
    with torch.no_grad():
        image_embeds = model.vision_model(pixel_values=inputs["pixel_values"]).last_hidden_state
        question_embeds = model.text_encoder(
            input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
            encoder_hidden_states=image_embeds,
        ).last_hidden_state
        ids = tokenizer([choice], return_tensors="pt")["input_ids"]  # <bos> old man <eos>
        ids[0, 0] = model.config.text_config.bos_token_id
        logits = model.text_decoder(
            input_ids=ids, encoder_hidden_states=question_embeds,
            encoder_attention_mask=inputs["attention_mask"],
        ).logits
    logprobs = torch.log_softmax(logits[0, :-1], dim=-1)
    expected = logprobs[torch.arange(ids.shape[1] - 1), ids[0, 1:]].mean()
    got = blip._blip_choice_logprobs(images[:1], question, ["yes", choice])[0, 1]
    assert ids.shape[1] == 4
    assert got.item() == pytest.approx(expected.item(), abs=1e-5)


def test_fingerprints_name_model_and_rule(clip, blip):
    assert clip.fingerprint != blip.fingerprint
    assert len(clip.fingerprint) == 64


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    path = make_tiny_llava(tmp_path_factory.mktemp("llava") / "tiny-llava")
    return load_answerer(path, device="cpu", offline=True)


def test_other_configs_give_an_image_text_to_text_answerer(llava):
    assert isinstance(llava, GenerativeAnswerer)
    assert type(llava.model).__name__ == "LlavaForConditionalGeneration"
    assert llava._chat_prompt("is there a person") == "user: <image> is there a person assistant: "


def test_chat_model_scores_are_mean_choice_log_probabilities(llava, images):
    choices = ["yes", "no", "old man"]
    scores = llava.score(images[:2], "is there a person", choices)
    assert_probability_rows(scores, 2, 3)
    np.testing.assert_array_equal(scores, llava.score(images[:2], "is there a person", choices))
    np.testing.assert_allclose(
        llava.score(images[:2], "is there a person", choices[::-1])[:, ::-1], scores, atol=1e-6
    )

    # by hand: prompt (without the tokenizer's trailing <eos>) + choice tokens, one at a time
    prompt = llava._chat_prompt("is there a person")
    inputs = llava.processor(images=images[:1], text=[prompt], return_tensors="pt")
    prompt_ids = inputs["input_ids"][:, :-1]
    means = []
    for choice in choices:
        choice_ids = torch.tensor([llava.tokenizer(choice, add_special_tokens=False)["input_ids"]])
        ids = torch.cat([prompt_ids, choice_ids], dim=1)
        with torch.no_grad():
            logits = llava.model(input_ids=ids, pixel_values=inputs["pixel_values"]).logits[0]
        logprobs = logits.log_softmax(-1)
        start = prompt_ids.shape[1]
        means.append(np.mean([logprobs[t - 1, ids[0, t]].item() for t in range(start, ids.shape[1])]))
    expected = np.exp(means) / np.exp(means).sum()
    np.testing.assert_allclose(scores[0], expected, atol=1e-5)
