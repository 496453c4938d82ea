"""The full-size benchmark (issue #46, ``benchmarks/full_size.py``) builds what it says it
builds, and its raw paths do the plugin's work: the same images and the same answers."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def full_size():
    spec = importlib.util.spec_from_file_location("full_size", ROOT / "benchmarks" / "full_size.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def test_configs_build_the_released_models(full_size):
    """Parameter counts of the released checkpoints (their model cards and safetensors
    headers), built on the meta device: a wrong width or depth in a config changes them."""
    meta = torch.device("meta")
    sd15 = full_size.build_sd15(meta, torch.float32, False)
    assert (parameters(sd15.unet), parameters(sd15.vae), parameters(sd15.text_encoder)) == (
        859_520_964, 83_653_863, 123_060_480)
    sdxl = full_size.build_sdxl(meta, torch.float32, False)
    assert (parameters(sdxl.unet), parameters(sdxl.text_encoder_2)) == (2_567_463_684, 694_659_840)
    assert parameters(full_size.build_clip(meta, torch.float32, False)[0]) == 427_616_513
    assert parameters(full_size.build_llava(meta, torch.float32, False)[0]) == 7_063_427_072
    assert parameters(full_size.build_llm(meta, torch.float32, False)[0]) == 6_738_415_616


def tiny_args(**overrides) -> argparse.Namespace:
    return argparse.Namespace(**{"tiny": True, "images": 2, "steps": 2, "judge_images": 2,
                                 "plugin_batch": "8", "profile": False, "repeat": 1, **overrides})


@pytest.mark.parametrize("case", ["sd15:fp32", "llava-7b:fp32"])
def test_raw_path_does_the_plugins_work(full_size, case):
    """Raw and plugin give the same pixels (generators) and probabilities (judges), so the
    ratio compares the same work; every path is timed and its peak read."""
    row = full_size.add_ratios(full_size.measure(case, tiny_args(), torch.device("cpu"),
                                                 ("plugin", "raw", "plugin-nocache")))
    difference = row.get("max_pixel_difference", row.get("max_probability_difference"))
    assert difference is not None and difference < 1e-6
    for path in ("plugin", "raw", "plugin-nocache"):
        assert row[path]["seconds"] > 0 and row[path]["peak_bytes"] > 0
    assert row["batch"] == 8 and row["time_ratio"] > 0 and row["memory_ratio"] > 0


def test_rounds_give_each_path_its_median_and_a_generator_its_later_run(full_size):
    """``--repeat``: every path timed in each round, the median kept; a generator's later
    run (its batch remembered) is a path of its own, with its own ratio."""
    row = full_size.add_ratios(full_size.measure("sd15:fp32", tiny_args(repeat=3), torch.device("cpu"),
                                                 full_size.cuda_paths("sd15:fp32")))
    for path in ("plugin", "plugin-later", "raw"):
        rounds = row[path]["rounds"]
        assert len(rounds) == 3 and row[path]["seconds"] == pytest.approx(sorted(rounds)[1], abs=1e-4)
    assert row["time_ratio_later"] == pytest.approx(
        row["plugin-later"]["seconds"] / row["raw"]["seconds"])
    assert full_size.cuda_paths("clip-l:fp16") == ("plugin", "raw")
    assert full_size.cuda_paths("clip-l:fp16", diagnostics=True)[-1] == "plugin-nocache"
