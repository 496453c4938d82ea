"""The toy-world build: the committed pipeline loads and generates; a fresh build follows its spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def test_committed_toy_sd_loads_and_generates_32px():
    from diffusers import DiffusionPipeline

    pipeline = DiffusionPipeline.from_pretrained(FIXTURES / "toy-sd", local_files_only=True)
    pipeline.set_progress_bar_config(disable=True)
    assert pipeline.safety_checker is None
    image = pipeline(
        "a photo of a doctor",
        num_inference_steps=2,
        guidance_scale=3.0,
        generator=torch.Generator().manual_seed(0),
        output_type="np",
    ).images[0]
    assert image.shape == (32, 32, 3)
    assert 0.0 <= image.min() and image.max() <= 1.0


def test_manifest_records_how_the_fixtures_were_built():
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    assert {"world", "seed", "versions", "models", "wall_s", "sampling"} <= set(manifest)
    assert manifest["world"]["sha256"] and "subjects:" in manifest["world"]["spec"]
    assert {"python", "torch", "diffusers", "transformers"} <= set(manifest["versions"])
    assert {"num_inference_steps", "guidance_scale"} <= set(manifest["sampling"])
    toy_sd = manifest["models"]["toy-sd"]
    assert {"config", "seed", "parameters", "wall_s"} <= set(toy_sd)
    assert manifest["wall_s"]["toy-sd"] > 0


def test_manifest_describes_the_world_spec_in_the_package():
    """The ground truth the example suites are judged against is the spec the models saw last."""
    from toyworld.build import world_record
    from toyworld.spec import load_world

    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    assert manifest["world"]["sha256"] == world_record(load_world(None))["sha256"]
    for run in manifest["models"]["toy-sd"].get("continued", []):
        assert {"steps", "lr", "seed", "world_sha256", "how"} <= set(run)
    if manifest["models"]["toy-sd"].get("continued"):
        assert manifest["models"]["toy-sd"]["continued"][-1]["world_sha256"] == manifest["world"]["sha256"]


def test_continued_training_keeps_the_build_record_and_adds_the_run():
    from toyworld.build import record_continuation, world_record
    from toyworld.spec import load_world

    world = load_world(None)
    old_world = {"name": "default", "sha256": "0" * 64, "spec": "..."}
    manifest = {"world": old_world,
                "models": {"toy-sd": {"config": {"unet_steps": 6000}, "size_bytes": 1, "probe_shares": {}}}}
    run = {"steps": 3000, "lr": 5e-4, "seed": 2, "size_bytes": 2}
    record_continuation(manifest, "toy-sd", run, world)

    entry = manifest["models"]["toy-sd"]
    assert entry["config"] == {"unet_steps": 6000}
    assert entry["built_on_world_sha256"] == "0" * 64
    assert entry["continued"] == [{**run, "world_sha256": world_record(world)["sha256"]}]
    assert entry["size_bytes"] == 2
    assert "probe_shares" not in entry  # measured on the weights before the run
    assert manifest["world"]["sha256"] == world_record(world)["sha256"]
    assert manifest["earlier_worlds"] == [old_world]

    record_continuation(manifest, "toy-sd", {"steps": 500, "size_bytes": 3}, world)
    assert [r["steps"] for r in manifest["models"]["toy-sd"]["continued"]] == [3000, 500]
    assert manifest["earlier_worlds"] == [old_world]  # same world again: nothing moves


def test_extending_the_tokenizer_appends_words_and_keeps_every_old_id():
    from pytest_t2ibias.testing.tokenizer import (
        build_word_tokenizer,
        extend_word_tokenizer,
    )

    base = build_word_tokenizer(["photo", "of", "a", "doctor"], model_max_length=20)
    extended = extend_word_tokenizer(base, ["mug", "doctor", "Honesty", "a"])
    old, new = base.get_vocab(), extended.get_vocab()
    assert {word: new[word] for word in old} == old
    assert [new["honesty"], new["mug"]] == [len(old), len(old) + 1]  # appended, sorted, lower-cased
    assert len(extended) == len(old) + 2 and extended.model_max_length == 20
    assert extended("a photo of a doctor").input_ids == base("a photo of a doctor").input_ids
    assert extended.unk_token_id not in extended("a photo of a mug").input_ids


def test_finetuning_on_a_world_with_new_words_extends_the_tokenizer_and_the_text_encoder(tmp_path):
    """Old captions encode to the same ids and the same text embeddings; the saved pipeline
    loads with the grown vocabulary and generates from a caption with a new word."""
    from dataclasses import replace

    import yaml
    from diffusers import StableDiffusionPipeline

    from toyworld import parse_world
    from toyworld.sample import world_vocabulary
    from toyworld.train_diffusion import (
        DiffusionConfig,
        assemble_pipeline,
        build_text_encoder,
        build_unet,
        build_vae,
        finetune_diffusion,
        make_tokenizer,
    )

    old_world = parse_world(yaml.safe_load(SECOND_WORLD))
    raw = yaml.safe_load(SECOND_WORLD)
    raw["modifiers"] = [{"phrase": "if honesty is the best policy", "applies_to": "person", "alone": True}]
    raw["captions"]["mix"] = {"plain": 0.5, "modifier": 0.5}
    new_world = parse_world(raw)
    config = replace(DiffusionConfig.quick(), vae_blocks=(8, 8), unet_blocks=(16, 16), text_hidden=16, text_heads=2,
                     attention_head_channels=8)
    tokenizer = make_tokenizer(old_world, config.model_max_length)
    torch.manual_seed(0)
    pipeline = assemble_pipeline(build_vae(config), build_text_encoder(config, tokenizer), tokenizer,
                                 build_unet(config, latent_size=config.resolution // 2 ** (len(config.vae_blocks) - 1)))
    pipeline.save_pretrained(tmp_path / "base", safe_serialization=True)

    record = finetune_diffusion(tmp_path / "base", new_world, tmp_path / "tuned", config=config, steps=1, n_images=8)
    assert record["added_words"] == ["best", "honesty", "if", "is", "policy", "the"]
    base = StableDiffusionPipeline.from_pretrained(tmp_path / "base", local_files_only=True)
    tuned = StableDiffusionPipeline.from_pretrained(tmp_path / "tuned", local_files_only=True)
    old_vocab = base.tokenizer.get_vocab()
    assert {w: tuned.tokenizer.get_vocab()[w] for w in old_vocab} == old_vocab
    assert set(tuned.tokenizer.get_vocab()) == set(old_vocab) | set(world_vocabulary(new_world))
    assert tuned.text_encoder.config.vocab_size == len(tuned.tokenizer) == len(old_vocab) + 6
    table = tuned.text_encoder.get_input_embeddings().weight
    assert table.shape[0] == len(tuned.tokenizer)
    caption = "a photo of a baker if honesty is the best policy"
    assert tuned.tokenizer.unk_token_id not in tuned.tokenizer(caption).input_ids
    tuned.set_progress_bar_config(disable=True)
    image = tuned(caption, num_inference_steps=2, generator=torch.Generator().manual_seed(0), output_type="np").images[0]
    assert image.shape == (32, 32, 3)


def test_decoder_only_continuation_keeps_the_encoder_unet_and_text_encoder(tmp_path):
    """``--steps 0 --decoder-steps N``: only the VAE's decoder moves, so the latent space the
    UNet was trained on stays exactly as it was."""
    from dataclasses import replace

    import yaml
    from diffusers import StableDiffusionPipeline

    from toyworld import parse_world
    from toyworld.train_diffusion import (
        DiffusionConfig,
        assemble_pipeline,
        build_text_encoder,
        build_unet,
        build_vae,
        finetune_diffusion,
        make_tokenizer,
    )

    world = parse_world(yaml.safe_load(SECOND_WORLD))
    config = replace(DiffusionConfig.quick(), vae_blocks=(8, 8), unet_blocks=(16, 16), text_hidden=16, text_heads=2,
                     attention_head_channels=8, vae_batch=8)
    tokenizer = make_tokenizer(world, config.model_max_length)
    torch.manual_seed(0)
    pipeline = assemble_pipeline(build_vae(config), build_text_encoder(config, tokenizer), tokenizer,
                                 build_unet(config, latent_size=config.resolution // 2 ** (len(config.vae_blocks) - 1)))
    pipeline.save_pretrained(tmp_path / "base", safe_serialization=True)

    record = finetune_diffusion(tmp_path / "base", world, tmp_path / "tuned", config=config, steps=0,
                                n_images=16, decoder_steps=3)
    assert record["decoder_steps"] == 3 and record["final_loss"] is None and "unet_s" not in record["wall_s"]
    base = StableDiffusionPipeline.from_pretrained(tmp_path / "base", local_files_only=True)
    tuned = StableDiffusionPipeline.from_pretrained(tmp_path / "tuned", local_files_only=True)

    def same(a, b):
        return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))

    assert same(base.vae.encoder, tuned.vae.encoder) and same(base.vae.quant_conv, tuned.vae.quant_conv)
    assert same(base.unet, tuned.unet) and same(base.text_encoder, tuned.text_encoder)
    assert not same(base.vae.decoder, tuned.vae.decoder)
    assert tuned.vae.config.scaling_factor == base.vae.config.scaling_factor


def test_an_anchored_vae_fine_tune_holds_the_old_looks_latents():
    """``--vae-steps``: encoder and decoder train, and an image that renders as before the world
    gained an axis (a plain mug, a doctor) keeps its latent: it moves far less than the same
    fine-tune without the anchor moves it, so what the UNet learnt stays valid."""
    from diffusers import AutoencoderKL

    from toyworld.spec import load_world
    from toyworld.train_diffusion import (
        encode_latents,
        finetune_vae_anchored,
        looks_as_before,
        make_training_set,
    )

    world = load_world()
    data = make_training_set(world, 96, seed=4, subjects=["mug", "laptop", "doctor"])
    anchored = torch.from_numpy(looks_as_before(data.records, ["pattern"]))
    assert 0 < int(anchored.sum()) < len(anchored)
    assert all(bool(a) == (r.attributes.get("pattern", "plain") == "plain") for a, r in zip(anchored, data.records))

    def moved(anchor_weight: float) -> torch.Tensor:
        torch.manual_seed(0)
        vae = AutoencoderKL(block_out_channels=(8, 8), down_block_types=("DownEncoderBlock2D",) * 2,
                            up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, norm_num_groups=4,
                            sample_size=32)
        before, _ = encode_latents(vae, data.images)
        finetune_vae_anchored(vae, data.images, anchored, torch.Generator().manual_seed(0), steps=40, batch=16,
                              lr=3e-3, anchor_weight=anchor_weight)
        after, _ = encode_latents(vae, data.images)
        return (after - before).pow(2).flatten(1).mean(1)[anchored].mean()

    assert moved(100.0) < 0.05 * moved(0.0)  # measured: 0.0012 against 1.65


# A second world, unlike the default: two occupations with opposite gender skews. If the
# build learned from the spec (and not from something baked into the code), generated
# bakers are mostly women and generated pilots mostly men.
SECOND_WORLD = """\
name: bakery_and_cockpit
axes:
  age:
    values: [young, middle-aged, old]
    position: before
    phrases: {young: young, middle-aged: middle-aged, old: old}
  gender:
    values: [male, female]
    position: before
    phrases: {male: male, female: female}
subjects:
  baker:
    look: {prop: circle, prop_colour: orange}
    shares:
      gender: {male: 0.10, female: 0.90}
  pilot:
    look: {prop: diamond, prop_colour: blue}
    shares:
      gender: {male: 0.90, female: 0.10}
captions:
  template: a photo of {subject}
  mix: {plain: 0.5, one_attribute: 0.3, two_attributes: 0.2}
"""


@pytest.mark.slow
def test_quick_build_of_a_second_world_follows_its_spec(tmp_path, monkeypatch):
    from diffusers import DiffusionPipeline

    from toyworld import expected_shares, load_world
    from toyworld.__main__ import main
    from toyworld.train_diffusion import measure_shares, train_probe

    spec = tmp_path / "second_world.yaml"
    spec.write_text(SECOND_WORLD)
    out = tmp_path / "models"
    monkeypatch.chdir(tmp_path)
    assert main(["build", "--world", str(spec), "--out", str(out), "--quick", "--seed", "3", "--debias-world", "none", "--stage", "toy-sd"]) == 0

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["world"]["name"] == "bakery_and_cockpit"
    assert manifest["quick"] is True

    world = load_world(spec)
    pipeline = DiffusionPipeline.from_pretrained(out / "toy-sd", local_files_only=True)
    probe, accuracy = train_probe(world, pipeline.vae, seed=0, n_images=2000, steps=300, held_out=400)
    assert accuracy["gender"] > 0.95, "the probe, not the pipeline, would be the error"

    n = 64
    rows = measure_shares(
        pipeline,
        probe,
        world,
        [("a photo of a baker", "baker", None), ("a photo of a pilot", "pilot", None)],
        ["gender", "age"],
        n=n,
        steps=manifest["sampling"]["num_inference_steps"],
        guidance_scale=manifest["sampling"]["guidance_scale"],
    )
    assert expected_shares(world, "baker", "gender")["female"] == pytest.approx(0.9)
    # Tolerance 0.25 on every share: at n=64 two standard errors are 0.07 (share 0.9) to 0.12
    # (share 1/3), and a quick-budget model (1000 steps) under-learns a 90/10 skew by up to
    # ~0.12 (measured: bakers 78% female, pilots 9%); the full build measures MAE 0.06.
    for row in rows:
        assert row["abs_error"] <= 0.25, row
    female = {row["prompt"].split()[-1]: row["measured"]["female"] for row in rows if row["axis"] == "gender"}
    assert female["baker"] - female["pilot"] >= 0.5, rows


def test_the_text_tokenizer_decodes_a_json_reply_as_written_and_wraps_like_the_word_tokenizer():
    """toy-lm's tokenizer (``train_text_tokenizer``): a reply decodes to the exact text, so a JSON
    list parses; the special ids match the word tokenizer's, so either stands in for the other."""
    import json

    from pytest_t2ibias.testing.tokenizer import SPECIAL_TOKENS, train_text_tokenizer

    reply = json.dumps([{"name": "pattern", "classes": ["plain", "striped", "dotted"],
                         "question": "What is the pattern of the object?"}])
    tokenizer = train_text_tokenizer([reply, "a photo of a mug\nJSON:"] * 20, vocab_size=400)
    ids = tokenizer(reply)["input_ids"]
    assert tokenizer.convert_ids_to_tokens([ids[0], ids[-1]]) == ["<bos>", "<eos>"]
    assert [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert tokenizer.decode(ids, skip_special_tokens=True) == reply
    assert json.loads(tokenizer.decode(ids[1:-1])) == json.loads(reply)
    assert len(ids) < len(reply) // 2  # merges learnt: not one token a character


def test_a_recovery_round_holds_the_object_share_of_captions_without_changing_the_world():
    """Issue #37: `continue --object-share` scales the objects' weights together (their ratios
    kept, the people's weights and every share untouched), so a continued run sees objects as
    often as when the person axes were learnt."""
    import numpy as np

    from toyworld.build import object_share_of, with_object_share
    from toyworld.sample import sample_people
    from toyworld.spec import load_world

    world = load_world()
    held = with_object_share(world, 0.15)
    assert object_share_of(world) > 0.4 and object_share_of(held) == pytest.approx(0.15)
    objects = [n for n, s in world.subjects.items() if s.kind == "object"]
    ratio = {n: held.subjects[n].weight / world.subjects[n].weight for n in objects}
    assert len(set(np.round(list(ratio.values()), 9))) == 1
    assert all(held.subjects[n] == world.subjects[n] for n, s in world.subjects.items() if s.kind != "object")
    assert all(held.subjects[n].shares == world.subjects[n].shares for n in objects)
    records = sample_people(held, 4000, seed=0)
    drawn = np.mean([world.subjects[r.subject].kind == "object" for r in records])
    assert drawn == pytest.approx(0.15, abs=0.02)
    with pytest.raises(ValueError):
        with_object_share(world, 1.0)
