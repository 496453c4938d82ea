"""What storing a judge's answers costs the request layer (issue #46: one fsync an answer).

    python benchmarks/bench_answer_writes.py [--answers 1024] [--batch 64] [--repeat 3]

A stand-in judge answers instantly (its images' red channel), so the figures are the cache's
alone: ``answers`` on a fresh disk cache until it returns (what the judge's caller waits on;
the writes go on behind) and until ``flush`` has every entry on disk, in wall seconds and in
this process's CPU seconds (user + sys, all threads), and with no cache for comparison.
``--prompts``: how many prompts the images are of (a judge's answers are claimed one
prompt's images at a time). Medians of ``--repeat`` runs. Run it from a checkout to time that checkout's code.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
from PIL import Image

from pytest_t2ibias._types import GeneratedImage, ImageSet
from pytest_t2ibias.store.cache import Cache, content_hash
from pytest_t2ibias.store.request_layer import RequestLayer


class RedJudge:
    fingerprint = "red-judge-v1"

    def score(self, images, question, choices, statements=None):
        x = np.array([image.getpixel((0, 0))[0] / 255 for image in images])
        return np.stack([x, 1 - x], axis=1)


def image_set(n: int, prompts: int = 8) -> ImageSet:
    items = []
    for i in range(n):
        picture = Image.new("RGB", (8, 8), (i % 251, i // 251 % 251, 7))
        items.append(GeneratedImage(f"a photo {i % prompts}", 0, i, picture, f"k{i}",
                                    content_hash(picture)))
    return ImageSet(tuple(items))


def one_run(images: ImageSet, batch: int, cached: bool) -> tuple[float, float, float]:
    """(wall seconds until ``answers`` returned, until every write is on disk, CPU seconds)."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as root:
        layer = RequestLayer(Cache(root if cached else None), answer_batch_size=batch)
        wall, cpu = time.perf_counter(), os.times()
        layer.answers(RedJudge(), images, "q", ["x", "y"])
        returned = time.perf_counter() - wall  # what a judge's caller waits on
        getattr(layer, "flush", lambda: None)()  # older checkouts wrote before returning
        after = os.times()
        return (returned, time.perf_counter() - wall,
                (after.user - cpu.user) + (after.system - cpu.system))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=8)
    args = parser.parse_args()
    images = image_set(args.answers, args.prompts)
    for label, cached in (("no cache", False), ("cache", True)):
        runs = [one_run(images, args.batch, cached) for _ in range(args.repeat)]
        print(f"{label:>8}: {args.answers} answers, batch {args.batch}: "
              f"returned in {statistics.median(r for r, _, _ in runs):.3f} s, "
              f"on disk in {statistics.median(w for _, w, _ in runs):.3f} s, "
              f"CPU {statistics.median(c for _, _, c in runs):.3f} s (median of {args.repeat})")


if __name__ == "__main__":
    main()
