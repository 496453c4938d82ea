"""Prompt-to-Prompt counterfactual sets (backends/prompt2prompt): the prompts, the token map,
the attention edit, and sets that share everything but the attribute on toy-sd and on the
tiny random-weight SD 1.x and SDXL pipelines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

from support.validation_scripts import validation_script  # noqa: E402

from pytest_t2ibias.backends.prompt2prompt import (  # noqa: E402
    AttentionControl,
    counterfactual_prompts,
    generate_counterfactual_set,
    token_mapper,
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = "a photo of a {} doctor"
AGE_GENDER = {"age": ["young", "old"], "gender": ["male", "female"]}


def test_counterfactual_prompts_are_every_intersectional_group():
    combos = counterfactual_prompts(TEMPLATE, AGE_GENDER)
    assert [prompt for _, prompt in combos] == [
        "a photo of a young male doctor", "a photo of a young female doctor",
        "a photo of a old male doctor", "a photo of a old female doctor"]
    assert combos[3][0] == {"age": "old", "gender": "female"}
    named = counterfactual_prompts("a {gender} doctor {skin}", {"gender": ["male"], "skin": ["with dark skin"]})
    assert named == [({"gender": "male", "skin": "with dark skin"}, "a male doctor with dark skin")]
    with pytest.raises(ValueError, match="slots"):
        counterfactual_prompts("a {gender} doctor", {"age": ["old"]})
    with pytest.raises(ValueError, match="one slot"):
        counterfactual_prompts("a doctor", {"age": ["old"]})


def test_token_mapper_maps_equal_tokens_and_spreads_a_longer_word():
    # bos a young doctor eos pad pad  ->  bos a middle - aged doctor eos
    source = [1, 5, 9, 7, 2, 0, 0]
    target = [1, 5, 10, 11, 12, 7, 2]
    mapper, alpha, edited_source, edited_target = token_mapper(source, target)
    assert edited_source == [2, 5, 6] and edited_target == [2, 3, 4]
    assert np.all(alpha == 1)
    assert mapper[3, 5] == 1 and mapper[4, 6] == 1  # doctor, eos follow their shift
    np.testing.assert_allclose(mapper[2, 2:5], [1 / 3] * 3)  # young's mass shared by the 3 tokens
    assert mapper.sum() == pytest.approx(5)  # the deleted pads' mass is gone, the rest kept
    inserted = token_mapper([1, 5, 2, 0], [1, 5, 8, 2])  # a new word before eos, a pad dropped
    assert inserted[1].tolist() == [1, 1, 0, 1]  # the new word keeps its own map (P2P's refinement)


def _control(prompts: int, keys: int, cross_steps: int = 2, self_steps: int = 1) -> AttentionControl:
    mappers = torch.stack([torch.eye(keys)] * prompts)
    mappers[1] = torch.roll(torch.eye(keys), 1, dims=1)  # target token j+1 takes source token j
    return AttentionControl(prompts=prompts, mappers=mappers, alphas=torch.ones(prompts, keys),
                            cross_steps=cross_steps, self_steps=self_steps,
                            edited_tokens=[[1]] * prompts, latent_size=(4, 4))


def test_edit_replaces_the_conditional_targets_maps_only_while_the_steps_last():
    heads, queries, keys, prompts = 2, 16, 5, 2
    control = _control(prompts, keys)
    probs = torch.softmax(torch.randn(2 * prompts * heads, queries, keys), dim=-1)  # uncond + cond
    edited = control.edit(probs, heads, cross=True).view(2 * prompts, heads, queries, keys)
    before = probs.view(2 * prompts, heads, queries, keys)
    torch.testing.assert_close(edited[:prompts], before[:prompts])  # guidance's unconditional half
    torch.testing.assert_close(edited[prompts], before[prompts])  # the source
    torch.testing.assert_close(edited[prompts + 1], torch.roll(before[prompts], 1, dims=-1))
    selfs = torch.softmax(torch.randn(2 * prompts * heads, queries, queries), dim=-1)
    replaced = control.edit(selfs, heads, cross=False).view(2 * prompts, heads, queries, queries)
    torch.testing.assert_close(replaced[prompts + 1], selfs.view(2 * prompts, heads, queries, queries)[prompts])
    control.step = 1  # past self_replace, within cross_replace
    assert control.edit(selfs, heads, cross=False) is selfs
    control.step = 2
    assert control.edit(probs, heads, cross=True) is probs
    control.step = 0
    foreign = probs[: 3 * heads]  # a batch that is not the set's: left alone
    assert control.edit(foreign, heads, cross=True) is foreign


def _pipeline(path):
    from diffusers import DiffusionPipeline

    pipeline = DiffusionPipeline.from_pretrained(path)
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


@pytest.fixture(scope="module")
def toy_sd():
    return _pipeline(ROOT / "fixtures" / "toy-sd")


def _pixels(image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.float64)


def test_without_control_the_processor_draws_what_diffusers_draws(toy_sd):
    prompts = counterfactual_prompts(TEMPLATE, {"gender": ["male", "female"]})
    ours = generate_counterfactual_set(toy_sd, TEMPLATE, {"gender": ["male", "female"]}, seed=3, steps=8,
                                       cross_replace=0.0, self_replace=0.0)
    generator = torch.Generator("cpu").manual_seed(3)
    noise = torch.randn((1, 4, 8, 8), generator=generator).expand(2, -1, -1, -1)
    theirs = toy_sd(prompt=[p for _, p in prompts], latents=noise, num_inference_steps=8, guidance_scale=7.5).images
    for member, image in zip(ours.members, theirs):
        assert np.abs(_pixels(member.image) - _pixels(image)).max() <= 1
    assert type(toy_sd.unet.attn_processors["mid_block.attentions.0.transformer_blocks.0.attn2.processor"]
                ).__name__ != "Prompt2PromptProcessor"  # restored after the call


@pytest.mark.parametrize("name", ["toy-sd", "sd", "sdxl"])
def test_control_moves_the_edited_images_and_never_the_source(name, toy_sd, model_zoo):
    pipeline = toy_sd if name == "toy-sd" else _pipeline(model_zoo[name])
    attributes = {"age": ["young", "old"]}
    free = generate_counterfactual_set(pipeline, TEMPLATE, attributes, seed=1, steps=8, cross_replace=0, self_replace=0)
    held = generate_counterfactual_set(pipeline, TEMPLATE, attributes, seed=1, steps=8, cross_replace=1, self_replace=1)
    assert np.array_equal(_pixels(free.members[0].image), _pixels(held.members[0].image))
    # the random tiny pipelines barely read their prompts: their target moved 0.11 (SD 1.x)
    # and 0.08 (SDXL) of 255 on average; toy-sd's several levels
    moved = np.abs(_pixels(free.members[1].image) - _pixels(held.members[1].image)).mean()
    assert moved > (1 if name == "toy-sd" else 0.02)


@pytest.mark.parametrize("name", ["toy-sd", "sd", "sdxl"])
def test_a_set_shares_everything_but_the_attribute(name, toy_sd, model_zoo):
    pipeline = toy_sd if name == "toy-sd" else _pipeline(model_zoo[name])
    # toy-sd draws age and gender over much of its 32x32 pixels: within / unpaired measured
    # 0.76 (0.67 outside the attribute region) at 4 seeds and 20 steps; the random tiny
    # pipelines barely read their prompts: 0.07 (SD 1.x) and 0.05 (SDXL) at 3 seeds, 8 steps.
    seeds, steps, bound = (4, 20, 0.85) if name == "toy-sd" else (3, 8, 0.25)
    figures = validation_script("p2p_pairing").pairing_figures(pipeline, TEMPLATE, AGE_GENDER, seeds, steps, 7.5)
    assert 0 < figures["region_share"] < 1
    assert figures["p2p"] < bound * figures["unpaired"], figures
    assert figures["p2p_outside"] < bound * figures["unpaired_outside"], figures
