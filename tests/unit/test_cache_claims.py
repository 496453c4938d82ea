"""Compute under a claim: processes sharing a cache generate and score each entry once."""

from __future__ import annotations

import multiprocessing
import os
import random
import time
from pathlib import Path

import numpy as np
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.store.request_layer import RequestLayer

PROMPTS = [f"a photo of a {subject}" for subject in ("doctor", "nurse", "pilot", "chef")]
IMAGES_PER_PROMPT = 12


class SlowLoggingGenerator:
    """Paints from the noise seed, slowly, and appends one line per image to ``log``."""

    fingerprint = "slow-logging-v1"

    def __init__(self, log: Path) -> None:
        self.log = log

    def generate(self, requests):
        time.sleep(0.02 * len(requests))
        with open(self.log, "a") as handle:
            handle.write("".join(f"{r.prompt}|{r.index}\n" for r in requests))
        return [Image.new("RGB", (4, 4), (r.noise_seed % 251, r.index, PROMPTS.index(r.prompt)))
                for r in requests]


class SlowLoggingAnswerer:
    fingerprint = "slow-answerer-v1"

    def __init__(self, log: Path) -> None:
        self.log = log

    def score(self, images, question, choices, statements=None):
        time.sleep(0.01 * len(images))
        with open(self.log, "a") as handle:
            handle.write("x\n" * len(images))
        # as a judge does: its answer depends on the image (a constant one is refused)
        first = np.array([image.getpixel((0, 0))[0] / 1000 + 0.25 for image in images])
        return np.stack([first, 1 - first], axis=1)


def _worker(cache_dir: str, logs: str, seed: int) -> None:
    requests = [ImageRequest(p, 0, i) for p in PROMPTS for i in range(IMAGES_PER_PROMPT)]
    random.Random(seed).shuffle(requests)  # workers start at different ends of the work
    layer = RequestLayer(Cache(Path(cache_dir)), batch_size=4)
    images = layer.images(SlowLoggingGenerator(Path(logs) / "images.log"), requests)
    layer.answers(SlowLoggingAnswerer(Path(logs) / "answers.log"), images, "q?", ["a", "b"])


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_four_processes_generate_and_score_each_entry_once(tmp_path):
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    workers = [context.Process(target=_worker, args=(str(tmp_path / "cache"), str(tmp_path), seed))
               for seed in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    generated = _lines(tmp_path / "images.log")
    unique = len(PROMPTS) * IMAGES_PER_PROMPT
    assert len(generated) == len(set(generated)) == unique
    assert len(_lines(tmp_path / "answers.log")) == unique
    assert not list((tmp_path / "cache").rglob("*.tmp"))
    # four processes contended for every key, each entry computed once, and no lock file stays
    assert not list((tmp_path / "cache").rglob("*.lock"))


def test_a_claim_held_elsewhere_is_waited_for_then_read(tmp_path):
    cache_dir = tmp_path / "cache"
    request = ImageRequest(PROMPTS[0], 0, 0)
    owner = Cache(cache_dir)
    from pytest_t2ibias.store.cache import image_key

    key = image_key(SlowLoggingGenerator.fingerprint, request)
    claim = owner.claim(key)
    assert claim is not None and Cache(cache_dir).claim(key) is None  # not claimable twice

    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    waiter = context.Process(target=_worker, args=(str(cache_dir), str(tmp_path), 0))
    waiter.start()
    time.sleep(1.0)  # the waiter does everything else, then waits on our claim
    owner.put_image(key, Image.new("RGB", (4, 4), (1, 2, 3)), request)
    claim.release()
    waiter.join(timeout=120)
    assert waiter.exitcode == 0
    generated = _lines(tmp_path / "images.log")
    assert f"{request.prompt}|0" not in generated  # read from our entry, not generated
    assert len(generated) == len(PROMPTS) * IMAGES_PER_PROMPT - 1


def _write_forever(cache_dir: str) -> None:
    layer = RequestLayer(Cache(Path(cache_dir)), batch_size=4)
    requests = [ImageRequest(f"prompt {i}", 0, j) for i in range(1000) for j in range(4)]
    layer.images(_FastGenerator(), requests)


class _FastGenerator:
    fingerprint = "fast-v1"

    def generate(self, requests):
        return [Image.new("RGB", (64, 64), (r.noise_seed % 251, r.index, 7)) for r in requests]


def test_kill_9_while_writing_leaves_no_corrupt_entry_and_its_temp_files_are_swept(tmp_path):
    import signal
    import warnings

    from pytest_t2ibias.store.cache import STALE_TMP_SECONDS, CacheWarning

    cache_dir = tmp_path / "cache"
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    for _ in range(3):
        writer = context.Process(target=_write_forever, args=(str(cache_dir),))
        writer.start()
        deadline = time.monotonic() + 30  # on a loaded machine the first write takes a while
        while not list(cache_dir.glob("images/*/*.png")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(random.uniform(0.1, 0.5))  # then kill it somewhere inside a later write
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()
    cache = Cache(cache_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # a corrupt entry would raise here
        entries = list((cache_dir / "images").glob("*/*.png"))
        assert entries
        for entry in entries:
            assert cache.get_image(entry.stem) is not None
    left = list(cache_dir.glob("images/*/.*.tmp"))
    old = time.time() - STALE_TMP_SECONDS - 1
    for tmp in left:
        os.utime(tmp, (old, old))
    cache.prepare()  # the next run's first write sweeps them
    assert not list(cache_dir.glob("images/*/.*.tmp"))


class _CountingCache(Cache):
    """A cache that counts the claims taken."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.claimed: list[str] = []

    def claim(self, key):
        self.claimed.append(key)
        return super().claim(key)


class _NotingAnswerer:
    """Answers from the image's red channel and notes each call's prompts."""

    fingerprint = "noting-answerer-v1"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def score(self, images, question, choices, statements=None):
        self.calls.append([PROMPTS[image.getpixel((0, 0))[2]] for image in images])
        first = np.array([image.getpixel((0, 0))[0] / 1000 + 0.25 for image in images])
        return np.stack([first, 1 - first], axis=1)


def _prompt_images(layer: RequestLayer, prompts: list[str], n: int):
    generator = SlowLoggingGenerator(Path(os.devnull))
    generator.generate = lambda requests: [  # type: ignore[method-assign]
        Image.new("RGB", (4, 4), (r.noise_seed % 251, r.index, PROMPTS.index(r.prompt))) for r in requests]
    return layer.images(generator, [ImageRequest(p, 0, i) for p in prompts for i in range(n)])


def test_a_judges_answers_take_one_claim_a_prompt_not_one_an_answer(tmp_path):
    cache = _CountingCache(tmp_path / "cache")
    layer = RequestLayer(cache, answer_batch_size=64)
    images = _prompt_images(layer, PROMPTS[:3], 20)
    layer.flush()
    cache.claimed.clear()
    answerer = _NotingAnswerer()
    layer.answers(answerer, images, "q?", ["a", "b"])
    layer.flush()
    assert len(cache.claimed) == 3  # the 60 answers' prompts, each claimed once
    assert sum(len(call) for call in answerer.calls) == 60
    assert not list((tmp_path / "cache").rglob("*.lock"))


def test_a_prompt_claimed_elsewhere_is_judged_after_the_others_once_released(tmp_path):
    import threading

    from pytest_t2ibias.store.cache import answer_claim_key

    layer = RequestLayer(Cache(tmp_path / "cache"), answer_batch_size=64)
    images = _prompt_images(layer, PROMPTS[:2], 6)
    layer.flush()
    owner = Cache(tmp_path / "cache")  # another process's claim on the first prompt's answers
    claim = owner.claim(answer_claim_key(_NotingAnswerer.fingerprint, "q?", ("a", "b"), None, PROMPTS[0]))
    assert claim is not None
    answerer = _NotingAnswerer()
    worker = threading.Thread(target=layer.answers, args=(answerer, images, "q?", ["a", "b"]))
    worker.start()
    time.sleep(1.0)
    assert answerer.calls == [[PROMPTS[1]] * 6]  # the other prompt's, at once; the first's wait
    claim.release()  # its owner gave up without writing: judged here, each once
    worker.join(timeout=60)
    assert answerer.calls == [[PROMPTS[1]] * 6, [PROMPTS[0]] * 6]
