"""What storing generated images costs the request layer, with its writes behind the work.

    python benchmarks/bench_write_behind.py [--size 512] [--images 48] [--seconds-per-image 0.1]

A stand-in generator makes ``--size`` px images and takes ``--seconds-per-image`` an image
without holding the GIL (as a GPU pipeline waits on its device). The script prints
generating alone, the same through ``RequestLayer`` with a disk cache (PNG encoding, hashing
and atomic writes on the writer threads), the same until ``flush`` has written every entry
(the session's end), and what those writes take on their own, which is what writing inline
would have added. Medians of ``--repeat`` runs. With ``--batch`` equal to ``--images`` (one
batch, as a call of up to 64 images under batch ``auto``) no batch follows to hide the writes:
issue #46's case.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.store.cache import Cache, content_hash
from pytest_t2ibias.store.request_layer import RequestLayer


class WaitingGenerator:
    """Smooth noise images (PNG-compressible like a photo), after a wait per image."""

    def __init__(self, size: int, seconds: float) -> None:
        self.size, self.seconds = size, seconds
        self.fingerprint = f"waiting-{size}-{seconds}"

    def generate(self, requests: list[ImageRequest]) -> list[Image.Image]:
        time.sleep(self.seconds * len(requests))
        return [_picture(self.size, request.noise_seed) for request in requests]


def _picture(size: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 255, (size // 16, size // 16, 3), dtype=np.uint8))
    smooth = np.asarray(coarse.resize((size, size), Image.BICUBIC)).astype(int)
    grain = rng.integers(-8, 8, (size, size, 3))
    return Image.fromarray(np.clip(smooth + grain, 0, 255).astype(np.uint8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seconds-per-image", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    requests = [ImageRequest("a photo", 0, i) for i in range(args.images)]
    alone, through_layer, flushed, writes_alone = [], [], [], []
    for _ in range(args.repeat):
        generator = WaitingGenerator(args.size, args.seconds_per_image)
        start = time.perf_counter()
        pictures = [image for i in range(0, len(requests), args.batch)
                    for image in generator.generate(requests[i:i + args.batch])]
        alone.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as root:
            layer = RequestLayer(Cache(Path(root) / "layer"), batch_size=args.batch)
            start = time.perf_counter()
            layer.images(generator, requests)
            through_layer.append(time.perf_counter() - start)
            layer.flush()
            flushed.append(time.perf_counter() - start)
            cache = Cache(Path(root) / "inline")
            hashes = [content_hash(picture) for picture in pictures]  # the layer's main thread's
            start = time.perf_counter()
            for i, (request, picture) in enumerate(zip(requests, pictures)):
                cache.put_image(f"{i:064x}", picture, request, hashes[i])
            writes_alone.append(time.perf_counter() - start)

    gen, layer, flush, writes = (statistics.median(x)
                                 for x in (alone, through_layer, flushed, writes_alone))
    print(f"{args.images} images of {args.size} px, {args.seconds_per_image * 1000:.0f} ms an "
          f"image, batches of {args.batch}; median of {args.repeat}")
    print(f"generating alone                 {gen:7.2f} s")
    print(f"through the request layer        {layer:7.2f} s  ({layer / gen:.3f}x; writes behind)")
    print(f"  and its flush (every entry on disk) {flush:7.2f} s  ({flush / gen:.3f}x)")
    print(f"the cache writes on their own    {writes:7.2f} s  ({writes / args.images * 1000:.0f} ms "
          f"an image; inline they would make it about {(gen + writes) / gen:.3f}x)")


if __name__ == "__main__":
    main()
