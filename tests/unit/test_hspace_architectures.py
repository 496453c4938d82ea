"""h-space read-out on every architecture people release: SDXL (its two text encoders and
added conditioning), SD3, Flux and PixArt (the middle transformer block), on tiny models."""

from __future__ import annotations

import numpy as np
import pytest

PROMPTS = ["a photo of a male doctor", "a photo of a female nurse", "a photo of a person"]
STEPS = 4
LAYERS = {
    "sd": "unet.mid_block",
    "sdxl": "unet.mid_block",
    "sd3": "transformer.transformer_blocks.1",  # 3 joint blocks: the middle one
    "flux": "transformer.single_transformer_blocks.0",  # 1 double + 2 single: the second of 3
    "pixart": "transformer.transformer_blocks.1",  # 2 blocks: index 2 // 2
}


@pytest.fixture(scope="module")
def pipelines(model_zoo):
    from diffusers import DiffusionPipeline

    loaded = {}

    def load(name):
        if name not in loaded:
            pipe = DiffusionPipeline.from_pretrained(model_zoo[name])
            pipe.set_progress_bar_config(disable=True)
            loaded[name] = pipe
        return loaded[name]

    return load


def reader_for(pipeline, **overrides):
    from pytest_t2ibias.backends.hspace import HSpaceReader

    options = dict(fingerprint="tiny", steps=STEPS, guidance_scale=3.0, batch_size=4, height=16, width=16)
    options.update(overrides)
    return HSpaceReader(pipeline, **options)


@pytest.mark.parametrize("name", list(LAYERS))
def test_the_layer_read_is_named_in_what_a_probe_records(pipelines, name):
    reader = reader_for(pipelines(name))
    assert reader.describe()["layer"] == LAYERS[name]
    assert LAYERS[name] in repr(reader)


@pytest.mark.parametrize("name", list(LAYERS))
def test_trajectory_is_the_layer_output_of_the_pipelines_own_sampling(pipelines, name):
    import torch

    from pytest_t2ibias.backends.hspace import capture_layer

    pipe = pipelines(name)
    reader = reader_for(pipe)
    features = reader.trajectory_features(PROMPTS[:2], [5, 6], [0, 2])
    with capture_layer(reader.layer.module, 2) as outputs:
        pipe(prompt=PROMPTS[:2], num_inference_steps=STEPS, guidance_scale=3.0, height=16, width=16,
             output_type="latent", generator=[torch.Generator("cpu").manual_seed(s) for s in (5, 6)])
    assert len(outputs) == STEPS  # one denoiser call a step, the conditional half kept
    expected = np.stack([outputs[i].reshape(2, -1).numpy() for i in (0, 2)], axis=1)
    assert features.shape == expected.shape and features.shape[2] > 0
    np.testing.assert_allclose(features, expected, rtol=1e-4, atol=1e-5)
    assert reader.unet_forwards == 3  # stopped after step index 2: no more denoiser calls


@pytest.mark.parametrize("name", list(LAYERS))
def test_one_candidate_forward_reads_what_sampling_that_prompt_reads(pipelines, name):
    """BGPS' Eq. 4 shortcut: the neutral prompt as a candidate at step t must give exactly the
    guided trajectory's h at t; another prompt must give something else (the prompt's inputs,
    SDXL's pooled text_embeds and Flux's pooled projections included, are swapped in)."""
    reader = reader_for(pipelines(name), batch_size=3)
    neutral = reader.neutral_latents(PROMPTS[2], [7, 8], step_index=2)
    assert neutral.model_input.shape[0] == 2 and neutral.timestep == reader.timesteps()[2]
    candidates = reader.candidate_features(PROMPTS, neutral)
    assert candidates.shape[:2] == (3, 2)
    trajectory = reader.trajectory_features([PROMPTS[2]] * 2, [7, 8], [2])[:, 0]
    np.testing.assert_allclose(candidates[2], trajectory, rtol=1e-4, atol=1e-4)
    assert not np.allclose(candidates[0], candidates[2], rtol=1e-4, atol=1e-4)


def test_sdxl_pooled_text_embeds_are_swapped_in_per_candidate(pipelines):
    """Only SDXL's added conditioning differs: candidates whose pooled embedding differs read
    differently even with the token embeddings held equal."""
    from pytest_t2ibias.backends.hspace import _merged

    reader = reader_for(pipelines("sdxl"))
    neutral = reader.neutral_latents(PROMPTS[2], [1], step_index=1)
    assert set(neutral.inputs["added_cond_kwargs"]) == {"text_embeds", "time_ids"}
    other = reader._prompt_inputs([PROMPTS[0]])
    from pytest_t2ibias.backends.hspace import _conditional_half

    other = _conditional_half(other, 1)
    mixed = {**other, "encoder_hidden_states": neutral.inputs["encoder_hidden_states"]}
    inputs = _merged(neutral.inputs, mixed, 1, latent_rows=[0], prompt_rows=[0])
    assert not np.allclose(inputs["added_cond_kwargs"]["text_embeds"].numpy(),
                           neutral.inputs["added_cond_kwargs"]["text_embeds"].numpy())


def test_a_pipeline_without_a_readable_denoiser_says_which_and_why():
    from pytest_t2ibias.backends.hspace import HSpaceReader
    from pytest_t2ibias.errors import BackendError

    class KandinskyLikePipeline:
        prior = object()
        scheduler = object()

    with pytest.raises(BackendError, match="KandinskyLikePipeline has neither a 'unet' nor a 'transformer'"):
        HSpaceReader(KandinskyLikePipeline(), fingerprint="x", steps=2, guidance_scale=1.0)
