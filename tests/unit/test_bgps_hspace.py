"""h-space read-out on a tiny random Stable Diffusion pipeline: the conditional half, seeded."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from pytest_t2ibias.testing import make_tiny_pipeline, torch_threads

PROMPTS = ["a photo of a male doctor", "a photo of a female nurse", "a photo of a person"]
STEPS = 4


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    from diffusers import StableDiffusionPipeline

    path = make_tiny_pipeline(tmp_path_factory.mktemp("pipe") / "tiny-sd")
    pipe = StableDiffusionPipeline.from_pretrained(path)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def reader_for(pipeline, guidance_scale=3.0, **overrides):
    from pytest_t2ibias.backends.hspace import HSpaceReader

    options = dict(fingerprint="tiny", steps=STEPS, guidance_scale=guidance_scale, batch_size=2)
    options.update(overrides)
    return HSpaceReader(pipeline, **options)


def test_hook_sees_the_guided_batch_and_keeps_its_conditional_half(pipeline):
    from pytest_t2ibias.backends.hspace import capture_layer

    seen = []
    handle = pipeline.unet.mid_block.register_forward_hook(lambda m, i, o: seen.append(o.shape[0]))
    try:
        guided = reader_for(pipeline, guidance_scale=3.0).trajectory_features(PROMPTS[:2], [0, 1], [0])
    finally:
        handle.remove()
    assert seen == [4]  # [uncond, cond] for 2 prompts, one UNet call to reach step 0
    # At step 0 the latents are the seeded noise whatever the guidance: the kept half must be
    # what an unguided (cond-only) run computes for the same prompts.
    unguided = reader_for(pipeline, guidance_scale=1.0).trajectory_features(PROMPTS[:2], [0, 1], [0])
    np.testing.assert_allclose(guided, unguided, rtol=1e-5, atol=1e-5)
    # ... and not the unconditional half.
    reader = reader_for(pipeline, guidance_scale=3.0)
    with capture_layer(pipeline.unet.mid_block) as outputs:  # no image count: the whole batch
        reader.trajectory_features(PROMPTS[:2], [0, 1], [0])
    assert outputs[0].shape[0] == 4
    assert not np.allclose(outputs[0][:2].reshape(2, -1).numpy(), guided[:, 0])


def test_trajectory_features_match_the_pipelines_own_sampling(pipeline):
    import torch

    from pytest_t2ibias.backends.hspace import capture_layer

    indices = list(range(STEPS))
    features = reader_for(pipeline).trajectory_features(PROMPTS[:2], [5, 6], indices)
    assert features.shape == (2, STEPS, 16 * 4 * 4)  # flattened channels x h x w
    with capture_layer(pipeline.unet.mid_block, 2) as outputs:
        pipeline(prompt=PROMPTS[:2], num_inference_steps=STEPS, guidance_scale=3.0, output_type="latent",
                 generator=[torch.Generator("cpu").manual_seed(s) for s in (5, 6)])
    expected = np.stack([o.reshape(2, -1).numpy() for o in outputs], axis=1)
    np.testing.assert_allclose(features, expected, rtol=1e-4, atol=1e-5)


def test_features_are_seeded_and_independent_of_batching(pipeline):
    one = reader_for(pipeline, batch_size=1).trajectory_features(PROMPTS, [3, 4, 5], [1, 3])
    three = reader_for(pipeline, batch_size=3).trajectory_features(PROMPTS, [3, 4, 5], [1, 3])
    np.testing.assert_allclose(one, three, rtol=1e-4, atol=1e-5)
    other_seed = reader_for(pipeline).trajectory_features(PROMPTS[:1], [99], [1])
    assert not np.allclose(other_seed[0], one[0, :1])


def test_candidate_forward_equals_the_conditional_half_of_a_guided_step(pipeline):
    reader = reader_for(pipeline, batch_size=3)
    neutral = reader.neutral_latents(PROMPTS[2], [7, 8], step_index=2)
    assert neutral.model_input.shape[0] == 2 and neutral.timestep == reader.timesteps()[2]
    forwards = reader.unet_forwards
    candidates = reader.candidate_features(PROMPTS, neutral)
    assert candidates.shape == (3, 2, 256)
    assert reader.unet_forwards - forwards == 2  # 6 (candidate, latent) pairs in batches of 3
    # The neutral prompt as a candidate: exactly the guided trajectory's h at that step.
    trajectory = reader.trajectory_features([PROMPTS[2]] * 2, [7, 8], [2])[:, 0]
    np.testing.assert_allclose(candidates[2], trajectory, rtol=1e-4, atol=1e-5)
    assert not np.allclose(candidates[0], candidates[2])


def test_mean_pooling_averages_space(pipeline):
    flat = reader_for(pipeline).trajectory_features(PROMPTS[:1], [0], [1])
    mean = reader_for(pipeline, pooling="mean").trajectory_features(PROMPTS[:1], [0], [1])
    np.testing.assert_allclose(mean[0, 0], flat[0, 0].reshape(16, 16).mean(axis=1), rtol=1e-5, atol=1e-6)


def test_step_index_out_of_range_is_refused(pipeline):
    with pytest.raises(ValueError, match="outside 0..3"):
        reader_for(pipeline).trajectory_features(PROMPTS[:1], [0], [STEPS])


@pytest.mark.parametrize("module", ["backends/hspace.py", "backends/probe.py", "backends/token_lm.py",
                                    "methods/bgps/__init__.py", "methods/bgps/search.py",
                                    "methods/bgps/gate.py"])
def test_bgps_modules_import_no_heavy_library_at_import_time(module):
    source = Path(__file__).parents[2] / "pytest_t2ibias" / module
    top_level = [node for node in ast.parse(source.read_text()).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = {alias.name.split(".")[0] for node in top_level for alias in node.names}
    names |= {node.module.split(".")[0] for node in top_level if isinstance(node, ast.ImportFrom) and node.module}
    assert not names & {"torch", "diffusers", "transformers", "scipy", "PIL"}
