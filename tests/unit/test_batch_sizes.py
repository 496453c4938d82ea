"""Batch sizes per role: parsed from --t2i-batch-size, ``auto`` sized to free device memory."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_t2ibias._settings import BatchSizes
from pytest_t2ibias.backends import _batching
from pytest_t2ibias.backends._batching import AutoBatch, batched, fit_to_memory


@pytest.mark.parametrize("text, expected", [
    ("8", BatchSizes(generator=8)),
    ("3", BatchSizes(generator=3)),
    ("auto", BatchSizes(generator="auto", vqa="auto", classifier="auto")),
    ("generator=auto,vqa=32", BatchSizes(generator="auto", vqa=32)),
    ("vqa=4, classifier=2", BatchSizes(generator=8, vqa=4, classifier=2)),
])
def test_batch_size_option_forms(text, expected):
    assert BatchSizes.parse(text) == expected
    assert BatchSizes.parse(str(expected)) == expected  # --help prints what parses back


@pytest.mark.parametrize("text, message", [
    ("0", "expected a positive integer or auto, got 0"),
    ("many", "expected a positive integer or auto, got 'many'"),
    ("unet=4", "unknown role 'unet'"),
    ("vqa=-1", "vqa: expected a positive integer or auto, got -1"),
])
def test_bad_batch_sizes_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        BatchSizes.parse(text)


def test_request_layer_batches_fill_an_auto_generator():
    assert BatchSizes(generator=8).requests() == 8
    assert BatchSizes(generator="auto").requests() == 64


def test_fit_to_memory():
    gib = 2**30
    assert fit_to_memory(gib, 10 * gib) == 8  # 80% of 10 GiB at 1 GiB an item
    assert fit_to_memory(3 * gib, 2 * gib) == 1  # never below one
    assert fit_to_memory(2**20, 80 * gib) == 64  # capped
    assert fit_to_memory(0, gib) == 64


def test_auto_on_cpu_is_the_role_default_and_runs_nothing_extra():
    calls = []
    batch = AutoBatch("auto", role="vqa", device="cpu")
    results = batched(list(range(40)), batch, lambda chunk: calls.append(list(chunk)) or chunk)
    assert batch.size == _batching.CPU_DEFAULT["vqa"] == 16
    assert [len(c) for c in calls] == [16, 16, 8]
    assert [x for chunk in results for x in chunk] == list(range(40))


def test_auto_on_cuda_sizes_from_the_first_pass_and_keeps_its_result(monkeypatch):
    """The first pass (one item) peaks 1 GiB above what was allocated; 10 GiB free, 2 GiB
    held by torch unallocated: 80% of 12 GiB at 1 GiB an item is 9 items a pass."""
    import torch

    gib, state = 2**30, {"allocated": 3 * 2**30}
    fake = SimpleNamespace(
        synchronize=lambda device: None, reset_peak_memory_stats=lambda device: None,
        memory_allocated=lambda device: state["allocated"],
        max_memory_allocated=lambda device: state["allocated"] + gib,
        mem_get_info=lambda device: (10 * gib, 80 * gib),
        memory_reserved=lambda device: state["allocated"] + 2 * gib)
    monkeypatch.setattr(torch, "cuda", fake)
    calls = []
    batch = AutoBatch("auto", role="generator", device=SimpleNamespace(type="cuda"))
    results = batched(list(range(20)), batch, lambda chunk: calls.append(list(chunk)) or chunk)
    assert batch.size == 9 and "1024 MiB an item" in batch.found_by
    assert calls == [[0], list(range(1, 10)), list(range(10, 19)), [19]]
    assert [x for chunk in results for x in chunk] == list(range(20))


def _fake_cuda(monkeypatch, item_bytes: int, free_bytes: int) -> None:
    import torch

    state = {"allocated": 3 * 2**30}
    monkeypatch.setattr(torch, "cuda", SimpleNamespace(
        synchronize=lambda device: None, reset_peak_memory_stats=lambda device: None,
        memory_allocated=lambda device: state["allocated"],
        max_memory_allocated=lambda device: state["allocated"] + item_bytes,
        mem_get_info=lambda device: (free_bytes, 80 * 2**30),
        memory_reserved=lambda device: state["allocated"]))


def test_a_probe_sizes_the_batch_and_every_item_then_runs_in_full_batches(monkeypatch):
    """A generator's first pass is a probe (a short call whose result is dropped), so the
    items are not split into a lone first one and the rest: 16 items, one call of 16."""
    gib = 2**30
    _fake_cuda(monkeypatch, gib, 25 * gib)  # 80% of 25 GiB at 1 GiB: 20 a pass
    probed, calls = [], []
    batch = AutoBatch("auto", role="generator", device=SimpleNamespace(type="cuda"))
    results = batched(list(range(16)), batch, lambda chunk: calls.append(list(chunk)) or chunk,
                      probe=probed.append)
    assert batch.size == 20 and probed == [0]
    assert calls == [list(range(16))]
    assert [x for chunk in results for x in chunk] == list(range(16))


def test_the_generator_probes_with_a_short_call_then_makes_every_image_in_one_call(monkeypatch):
    from PIL import Image

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends import generator as generator_module

    gib = 2**30
    _fake_cuda(monkeypatch, gib, 25 * gib)
    monkeypatch.setattr(generator_module, "resolve_device", lambda device: SimpleNamespace(type="cuda"))
    calls = []

    class Pipeline:
        scheduler = SimpleNamespace(config={})

        def to(self, *args):
            return self

        def set_progress_bar_config(self, **kwargs):
            pass

        def __call__(self, prompt, generator, output_type, num_inference_steps=30, guidance_scale=7.5):
            calls.append((len(prompt), num_inference_steps))
            return SimpleNamespace(images=[Image.new("RGB", (8, 8)) for _ in prompt])

    made = generator_module.DiffusersGenerator(Pipeline(), model_fingerprint="fake", batch_size="auto",
                                               device="cuda")
    images = made.generate([ImageRequest(prompt=f"a photo {i}", seed=0, index=i) for i in range(16)])
    assert len(images) == 16
    assert calls == [(1, generator_module.PROBE_STEPS), (16, 30)]  # the probe, then one call


def test_a_given_size_is_used_as_given():
    batch = AutoBatch(3, role="classifier", device=SimpleNamespace(type="cuda"))
    assert [len(c) for c in batched(list(range(7)), batch, list)] == [3, 3, 1]
