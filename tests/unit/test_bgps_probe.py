"""h-space probes: self-describing on disk, refused for another generator, trained once per key."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_t2ibias.backends.hspace import HSpaceReader
from pytest_t2ibias.backends.probe import (
    METADATA_FILE,
    HSpaceProbeScorer,
    LinearProbe,
    ProbeTraining,
    labelled_prompts,
    load_or_train_probe,
    probe_directory,
    train_probe,
)
from pytest_t2ibias.errors import ProbeMismatchError
from pytest_t2ibias.testing import make_tiny_pipeline, torch_threads

TRAINING = ProbeTraining(images_per_prompt=4, held_out_fraction=0.25, max_iter=50)
SETTINGS = dict(step_indices=[0, 2], subjects=["doctor", "nurse"], training=TRAINING)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    from diffusers import StableDiffusionPipeline

    pipe = StableDiffusionPipeline.from_pretrained(make_tiny_pipeline(tmp_path_factory.mktemp("pipe") / "sd"))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def reader(pipeline, **overrides):
    options = dict(fingerprint="sha256:tiny", steps=4, guidance_scale=3.0, batch_size=16)
    options.update(overrides)
    return HSpaceReader(pipeline, **options)


@pytest.fixture(scope="module")
def probe(pipeline):
    return train_probe(reader(pipeline), "gender", ["male", "female"], **SETTINGS)


def test_labelled_prompts_name_each_value_for_a_person_and_every_subject():
    assert labelled_prompts(["male", "female"], ["nurse"]) == [
        ("a photo of a male person", 0), ("a photo of a male nurse", 0),
        ("a photo of a female person", 1), ("a photo of a female nurse", 1),
    ]
    assert labelled_prompts(["old"], phrases={"old": "elderly"})[0][0] == "a photo of a elderly person"


def test_probe_describes_itself(probe, pipeline, tmp_path):
    directory = probe.save(tmp_path / "probe")
    metadata = json.loads((directory / METADATA_FILE).read_text())
    assert metadata["classes"] == ["male", "female"] and metadata["axis"] == "gender"
    assert metadata["step_indices"] == [0, 2]
    assert metadata["timesteps"] == [reader(pipeline).timesteps()[i] for i in (0, 2)]
    generator = metadata["generator"]
    assert generator["layer"] == "unet.mid_block" and generator["pooling"] == "flatten"
    assert (generator["height"], generator["width"]) == (16, 16)
    assert generator["generator_fingerprint"] == "sha256:tiny"
    assert generator["scheduler"] == "DDIMScheduler" and "beta_schedule" in generator["scheduler_config"]
    training = metadata["training"]
    assert len(training["prompts"]) == 6 and training["images_per_class"] == {"male": 12, "female": 12}
    assert training["train_images"] == 18 and training["held_out_images"] == 6
    assert set(metadata["held_out_accuracy"]) == {"0", "2"}
    assert metadata["feature_size"] == 256


def test_saved_probe_loads_and_predicts_the_same(probe, pipeline, tmp_path):
    loaded = LinearProbe.load(probe.save(tmp_path / "probe"), reader(pipeline))
    features = np.random.default_rng(0).normal(size=(5, 256))
    p = loaded.probabilities(features, 2)
    np.testing.assert_allclose(p, probe.probabilities(features, 2), rtol=1e-5)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


@pytest.mark.parametrize(("override", "named"), [
    ({"fingerprint": "sha256:other"}, "generator_fingerprint"),
    ({"height": 32, "width": 32}, "height"),
    ({"steps": 6}, "steps"),
    ({"pooling": "mean"}, "pooling"),
])
def test_a_probe_for_another_generator_is_refused(probe, pipeline, tmp_path, override, named):
    directory = probe.save(tmp_path / "probe")
    with pytest.raises(ProbeMismatchError, match=named) as failure:
        LinearProbe.load(directory, reader(pipeline, **override))
    assert str(directory) in str(failure.value) and "Retrain" in str(failure.value)


def test_a_probe_for_another_scheduler_config_names_the_key(probe, pipeline, tmp_path):
    from diffusers import DDIMScheduler

    directory = probe.save(tmp_path / "probe")
    original = pipeline.scheduler
    pipeline.scheduler = DDIMScheduler.from_config(original.config, timestep_spacing="trailing")
    try:
        with pytest.raises(ProbeMismatchError, match="scheduler_config.timestep_spacing"):
            LinearProbe.load(directory, reader(pipeline))
    finally:
        pipeline.scheduler = original


def test_a_step_without_a_head_is_refused(probe, pipeline):
    with pytest.raises(ProbeMismatchError, match="step index 1"):
        HSpaceProbeScorer(reader(pipeline), probe, "male", step_index=1)
    with pytest.raises(ValueError, match="not one of"):
        HSpaceProbeScorer(reader(pipeline), probe, "old", step_index=2)


def test_probe_is_trained_once_per_key_and_reused_warm(pipeline, tmp_path, monkeypatch):
    first = load_or_train_probe(tmp_path, reader(pipeline), "gender", ["male", "female"], **SETTINGS)
    assert first.path == probe_directory(tmp_path, reader(pipeline), "gender", ["male", "female"], **SETTINGS)

    def no_training(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr("pytest_t2ibias.backends.probe.train_probe", no_training)
    warm = load_or_train_probe(tmp_path, reader(pipeline), "gender", ["male", "female"], **SETTINGS)
    np.testing.assert_array_equal(warm.weight, first.weight)
    other_keys = {
        probe_directory(tmp_path, reader(pipeline, fingerprint="sha256:other"), "gender", ["male", "female"], **SETTINGS),
        probe_directory(tmp_path, reader(pipeline), "gender", ["female", "male"], **SETTINGS),
        probe_directory(tmp_path, reader(pipeline), "gender", ["male", "female"], **{**SETTINGS, "step_indices": [1]}),
        probe_directory(tmp_path, reader(pipeline), "gender", ["male", "female"], **{**SETTINGS, "subjects": []}),
    }
    assert first.path not in other_keys and len(other_keys) == 4


def test_scorer_averages_the_probe_over_k_latents(probe, pipeline):
    scorer = HSpaceProbeScorer(reader(pipeline), probe, "female", step_index=2, latents=3)
    prompts = ["a photo of a person working as a nurse", "a photo of a person working as a doctor"]
    per_latent = scorer.per_latent(prompts)
    assert per_latent.shape == (2, 3) and ((per_latent >= 0) & (per_latent <= 1)).all()
    np.testing.assert_allclose(scorer(prompts), per_latent.mean(axis=1))
    assert scorer.unet_forwards == 3 * 2 + 2 * (2 * 3)  # neutral: 2 steps x 3 latents; then 2 x 3 x 2 calls
    again = HSpaceProbeScorer(reader(pipeline), probe, "female", step_index=2, latents=3)
    np.testing.assert_allclose(again(prompts), scorer(prompts))
