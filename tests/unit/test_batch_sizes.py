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


def test_auto_on_cpu_without_a_memory_reading_is_the_role_default(monkeypatch):
    monkeypatch.setattr(_batching, "_available_bytes", lambda: None)
    calls = []
    batch = AutoBatch("auto", role="vqa", device="cpu")
    results = batched(list(range(40)), batch, lambda chunk: calls.append(list(chunk)) or chunk)
    assert batch.size == _batching.CPU_DEFAULT["vqa"] == 16
    assert [len(c) for c in calls] == [16, 16, 8]
    assert [x for chunk in results for x in chunk] == list(range(40))
    assert batch.found_by == "cpu default"


class FakeCpu:
    """A CPU pass of k items takes ``seconds[k]`` an item and raises the process's peak
    memory by ``item`` bytes an item; ``available`` bytes are free."""

    def __init__(self, monkeypatch, seconds, *, item=0, available=64 * 2**30):
        self.now, self.peak, self.seconds, self.item = 0.0, 2**30, seconds, item
        self.calls: list[list[int]] = []
        monkeypatch.setattr(_batching, "_clock", lambda: self.now)
        monkeypatch.setattr(_batching, "_peak_rss", lambda: self.peak)
        monkeypatch.setattr(_batching, "_available_bytes", lambda: available)

    def run(self, chunk):
        self.calls.append(list(chunk))
        self.now += self.seconds[len(chunk)] * len(chunk)
        self.peak += self.item * len(chunk)
        return chunk


def test_auto_on_cpu_doubles_until_a_doubled_pass_is_slower_an_item(monkeypatch):
    # 16 within 10% of 8 (noise: kept, doubled), 32 faster, 64 20% slower than 32: back to 32
    cpu = FakeCpu(monkeypatch, {8: 0.100, 16: 0.105, 32: 0.050, 64: 0.060, 20: 1.0})
    batch = AutoBatch("auto", role="generator", device="cpu")
    results = batched(list(range(300)), batch, cpu.run)
    assert [len(c) for c in cpu.calls] == [8, 16, 32, 64, 32, 32, 32, 32, 32, 20]
    assert [x for chunk in results for x in chunk] == list(range(300))  # every pass kept
    assert (batch.size, batch.growing) == (32, False)
    assert batch.found_by == "cpu: 32 (20.0 items/s; 64: 16.7)"


def test_auto_on_cpu_settles_where_a_doubled_pass_would_not_fit_in_memory(monkeypatch):
    # a pass raises the peak 1 GiB an item: 16 items need 16 GiB, beyond 80% of 12 GiB
    cpu = FakeCpu(monkeypatch, {8: 1.0, 4: 1.0}, item=2**30, available=12 * 2**30)
    batch = AutoBatch("auto", role="generator", device="cpu")
    batched(list(range(20)), batch, cpu.run)
    assert [len(c) for c in cpu.calls] == [8, 8, 4]
    assert (batch.size, batch.growing) == (8, False)
    assert batch.found_by == "cpu: 8 (1.0 items/s; 12.0 GiB available)"


def test_auto_on_cpu_grows_only_on_full_passes_and_across_calls(monkeypatch):
    cpu = FakeCpu(monkeypatch, {5: 0.2, 8: 0.1, 16: 0.05, 32: 0.025, 52: 0.1, 64: 0.02})
    batch = AutoBatch("auto", role="generator", device="cpu")
    batched(list(range(5)), batch, cpu.run)  # a short call: no full pass, no verdict
    assert (batch.size, batch.growing) == (8, True)
    batched(list(range(8)), batch, cpu.run)
    batched(list(range(100)), batch, cpu.run)
    assert [len(c) for c in cpu.calls] == [5, 8, 16, 32, 52]
    assert (batch.size, batch.growing) == (64, True)
    batched(list(range(64)), batch, cpu.run)
    assert (batch.size, batch.growing) == (64, False)  # 128 would pass the cap
    assert batch.found_by == "cpu: 64 (50.0 items/s; the cap)"


class FakeCuda:
    """torch.cuda as the batch sizing reads it: each pass peaks ``item`` bytes an item above
    what was allocated; a pass of more than ``fits`` items runs out of memory."""

    def __init__(self, item: int, free: int, fits: int = 10**6) -> None:
        import torch

        self.item, self.free, self.fits, self.last = item, free, fits, 0
        self.allocated = 3 * 2**30
        self.OutOfMemoryError = torch.cuda.OutOfMemoryError

    def synchronize(self, device): pass
    def reset_peak_memory_stats(self, device): pass
    def empty_cache(self): pass
    def memory_allocated(self, device): return self.allocated
    def memory_reserved(self, device): return self.allocated + 2 * 2**30
    def max_memory_allocated(self, device): return self.allocated + self.last * self.item
    def mem_get_info(self, device): return self.free, 80 * 2**30
    def get_device_properties(self, device): return SimpleNamespace(name="Fake 80GB", total_memory=80 * 2**30)

    def run(self, chunk, calls):
        if len(chunk) > self.fits:
            calls.append(("out of memory", len(chunk)))
            raise self.OutOfMemoryError("CUDA out of memory")
        self.last = len(chunk)
        calls.append(list(chunk))
        return chunk


def test_auto_on_cuda_sizes_on_the_first_batch_itself_and_keeps_its_result(monkeypatch):
    """A judge's first pass is the first batch (20 items, not one item then the rest): it
    peaks 20 GiB at 1 GiB an item; 10 GiB free plus 2 GiB held unallocated: 80% of 12 GiB at
    1 GiB an item is 9 items a pass after it."""
    import torch

    fake = FakeCuda(item=2**30, free=10 * 2**30)
    monkeypatch.setattr(torch, "cuda", fake)
    calls = []
    batch = AutoBatch("auto", role="vqa", device=SimpleNamespace(type="cuda"))
    results = batched(list(range(20)), batch, lambda chunk: fake.run(chunk, calls))
    assert batch.size == 9 and "1024 MiB an item (a pass of 20)" in batch.found_by
    assert calls == [list(range(20))]
    assert [x for chunk in results for x in chunk] == list(range(20))
    more = batched(list(range(20)), batch, lambda chunk: fake.run(chunk, calls))
    assert [len(chunk) for chunk in more] == [9, 9, 2]


def test_a_first_pass_that_runs_out_of_memory_is_halved_until_it_fits(monkeypatch):
    import torch

    fake = FakeCuda(item=2**30, free=10 * 2**30, fits=12)
    monkeypatch.setattr(torch, "cuda", fake)
    calls = []
    batch = AutoBatch("auto", role="vqa", device=SimpleNamespace(type="cuda"))
    results = batched(list(range(50)), batch, lambda chunk: fake.run(chunk, calls))
    assert calls[:3] == [("out of memory", 50), ("out of memory", 25), list(range(12))]
    assert batch.size == 9 and [x for chunk in results for x in chunk] == list(range(50))


def test_one_item_that_runs_out_of_memory_is_the_error(monkeypatch):
    import torch

    fake = FakeCuda(item=2**30, free=10 * 2**30, fits=0)
    monkeypatch.setattr(torch, "cuda", fake)
    batch = AutoBatch("auto", role="vqa", device=SimpleNamespace(type="cuda"))
    with pytest.raises(torch.cuda.OutOfMemoryError):
        batched(list(range(4)), batch, lambda chunk: fake.run(chunk, []))


def test_a_probe_sizes_the_batch_then_every_item_runs_in_full_batches(monkeypatch):
    """A generator's first pass is a probe (a short call whose result is dropped), so the
    items are not split into a lone first one and the rest: 16 items, one call of 16."""
    import torch

    fake = FakeCuda(item=2**30, free=23 * 2**30)  # 80% of 25 GiB at 1 GiB: 20 a pass
    monkeypatch.setattr(torch, "cuda", fake)
    probed, calls = [], []

    def probe(item):
        probed.append(item)
        fake.last = 1

    batch = AutoBatch("auto", role="generator", device=SimpleNamespace(type="cuda"))
    results = batched(list(range(16)), batch, lambda chunk: fake.run(chunk, calls), probe=probe)
    assert batch.size == 20 and probed == [0]
    assert calls == [list(range(16))]
    assert [x for chunk in results for x in chunk] == list(range(16))


def test_a_probe_the_pipeline_refuses_falls_back_to_a_first_item_made_in_full(monkeypatch):
    import torch

    fake = FakeCuda(item=2**30, free=10 * 2**30)
    monkeypatch.setattr(torch, "cuda", fake)

    def probe(item):
        raise ValueError("operands could not be broadcast")  # PNDM at one step, say

    calls = []
    batch = AutoBatch("auto", role="generator", device=SimpleNamespace(type="cuda"))
    results = batched(list(range(5)), batch, lambda chunk: fake.run(chunk, calls), probe=probe)
    assert calls == [[0], [1, 2, 3, 4]] and batch.size == 9
    assert [x for chunk in results for x in chunk] == list(range(5))


def test_the_generator_probes_with_a_short_call_then_makes_every_image_in_one_call(monkeypatch):
    import torch
    from PIL import Image

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends import generator as generator_module

    monkeypatch.setattr(torch, "cuda", FakeCuda(item=2**30, free=23 * 2**30))
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


class _RecordingPipeline:
    """A pipeline that records (images, steps) of each call, peaking on the fake device as
    its images say."""

    scheduler = SimpleNamespace(config={})

    def __init__(self, calls: list) -> None:
        import torch

        self.calls, self.cuda = calls, torch.cuda

    def to(self, *args):
        return self

    def set_progress_bar_config(self, **kwargs):
        pass

    def __call__(self, prompt, generator, output_type, num_inference_steps=30, guidance_scale=7.5):
        from PIL import Image

        self.calls.append((len(prompt), num_inference_steps))
        self.cuda.last = len(prompt)
        return SimpleNamespace(images=[Image.new("RGB", (8, 8)) for _ in prompt])


def test_a_later_run_sizes_its_batch_from_the_remembered_probe_and_probes_nothing(monkeypatch, tmp_path):
    import torch

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends import generator as generator_module

    monkeypatch.setattr(torch, "cuda", FakeCuda(item=2**30, free=23 * 2**30))
    monkeypatch.setattr(generator_module, "resolve_device", lambda device: SimpleNamespace(type="cuda"))
    requests = [ImageRequest(prompt=f"a photo {i}", seed=0, index=i) for i in range(16)]
    runs = []
    for _ in range(2):  # two sessions on one cache
        calls: list = []
        made = generator_module.DiffusersGenerator(
            _RecordingPipeline(calls), model_fingerprint="fake", batch_size="auto", device="cuda",
            batch_memo=tmp_path / "batches")
        assert len(made.generate(requests)) == 16
        runs.append((calls, made.batch.size, made.batch.found_by))
    assert runs[0][0] == [(1, generator_module.PROBE_STEPS), (16, 30)]
    assert runs[1][0] == [(16, 30)]  # no probe: the first run's cost an image, remembered
    assert runs[0][1] == runs[1][1] == 20 and "remembered" in runs[1][2]
    assert len(list((tmp_path / "batches").glob("*.json"))) == 1


def test_other_sampling_or_no_memo_folder_probes_again(monkeypatch, tmp_path):
    import torch

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends import generator as generator_module

    monkeypatch.setattr(torch, "cuda", FakeCuda(item=2**30, free=23 * 2**30))
    monkeypatch.setattr(generator_module, "resolve_device", lambda device: SimpleNamespace(type="cuda"))
    for steps, memo in ((30, tmp_path), (40, tmp_path), (30, None)):  # 30 remembered, 40 new
        calls: list = []
        made = generator_module.DiffusersGenerator(
            _RecordingPipeline(calls), model_fingerprint="fake", batch_size="auto", device="cuda",
            steps=steps, batch_memo=memo)
        made.generate([ImageRequest(prompt="a photo", seed=0, index=i) for i in range(4)])
        assert calls[0] == (1, generator_module.PROBE_STEPS)
        calls.clear()
        if memo is not None:  # the same sampling again: remembered
            again = generator_module.DiffusersGenerator(
                _RecordingPipeline(calls), model_fingerprint="fake", batch_size="auto",
                device="cuda", steps=steps, batch_memo=memo)
            again.generate([ImageRequest(prompt="a photo", seed=0, index=i) for i in range(4)])
            assert calls == [(4, steps)]


@pytest.mark.parametrize("memo", ['{"item_bytes": -5, "measured": "x"}', "not json", '{"measured": 1}'])
def test_an_unusable_memo_is_a_probe_as_before(monkeypatch, tmp_path, memo):
    import torch

    fake = FakeCuda(item=2**30, free=23 * 2**30)
    monkeypatch.setattr(torch, "cuda", fake)
    (tmp_path / "memo.json").write_text(memo)
    probed, calls = [], []

    def probe(item):
        probed.append(item)
        fake.last = 1

    batch = AutoBatch("auto", role="generator", device=SimpleNamespace(type="cuda"),
                      memo=tmp_path / "memo.json")
    batched(list(range(4)), batch, lambda chunk: fake.run(chunk, calls), probe=probe)
    assert probed == [0] and batch.size == 20 and "a pass of 1" in batch.found_by


def test_a_remembered_size_that_runs_out_of_memory_is_halved_and_forgotten(monkeypatch, tmp_path):
    """The memo says 1 GiB an image: 20 a call in 25 GiB; the device now holds 8 (another
    process took memory the driver still reports free): 16 fails, 10 fails, 5 runs."""
    import torch

    fake = FakeCuda(item=2**30, free=23 * 2**30, fits=8)
    monkeypatch.setattr(torch, "cuda", fake)
    memo = tmp_path / "memo.json"
    memo.write_text('{"item_bytes": 1073741824, "measured": "2026-11-27 21:00 UTC"}')
    calls = []
    batch = AutoBatch("auto", role="generator", device=SimpleNamespace(type="cuda"), memo=memo)
    results = batched(list(range(16)), batch, lambda chunk: fake.run(chunk, calls),
                      probe=lambda item: pytest.fail("a remembered size probes nothing"))
    assert calls[:2] == [("out of memory", 16), ("out of memory", 10)]
    assert [len(c) for c in calls[2:]] == [5, 5, 5, 1]
    assert [x for chunk in results for x in chunk] == list(range(16))
    assert batch.size == 5 and "halved to 5" in batch.found_by and not memo.exists()


def test_a_given_size_is_used_as_given():
    batch = AutoBatch(3, role="classifier", device=SimpleNamespace(type="cuda"))
    assert [len(c) for c in batched(list(range(7)), batch, list)] == [3, 3, 1]
