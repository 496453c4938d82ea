"""Issue #46: the generator's batch on a CPU, fixed 8 (the option's default) against ``auto``
(grown while a doubled pass is faster an item, ``backends/_batching.py``).

    python benchmarks/cpu_batch.py                    # toy-sd, 512 images a side
    python benchmarks/cpu_batch.py --model fixtures/toy-sd --images 256 --repeat 3

Each side generates the same requests (one prompt set, seeds 0..n-1, the toy world's sampling)
through the plugin's ``DiffusersGenerator`` with no cache, in turn, ``--repeat`` rounds, the
median kept; auto starts fresh every round (it grows again). It prints images a second, the
ratio auto / fixed, the size auto settled on and why, and the largest pixel difference between
the two sides' images (batched convolutions round in another order; docs/models.md).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ("a photo of a doctor", "a photo of a nurse", "a photo of a musician",
           "a photo of a farmer")


def generate(model: str, batch_size: int | str, requests: list) -> tuple[float, list, str]:
    from pytest_t2ibias.backends._batching import AutoBatch
    from pytest_t2ibias.backends.generator import DiffusersGenerator

    generator = DiffusersGenerator.from_pretrained(model, batch_size=batch_size, device="cpu")
    generator.generate(requests[:1])  # the first call's one-time costs, on neither side's clock
    generator.batch = AutoBatch(batch_size, role="generator", device=generator.device)
    start = time.perf_counter()
    images: list = []
    for begin in range(0, len(requests), 64):  # what the request layer hands it at once
        images += generator.generate(requests[begin:begin + 64])
    seconds = time.perf_counter() - start
    return len(requests) / seconds, images, generator.batch.found_by


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "fixtures" / "toy-sd"))
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--guidance", type=float, default=2.0)
    args = parser.parse_args()

    import torch

    from pytest_t2ibias._types import ImageRequest

    requests = [ImageRequest(prompt=PROMPTS[i % len(PROMPTS)], seed=0, index=i,
                             steps=args.steps, guidance=args.guidance)
                for i in range(args.images)]
    rates: dict[str, list[float]] = {"fixed 8": [], "auto": []}
    settled: list[str] = []
    images: dict[str, list] = {}
    for _ in range(args.repeat):
        for side, size in (("fixed 8", 8), ("auto", "auto")):
            rate, images[side], found_by = generate(args.model, size, requests)
            rates[side].append(rate)
            if side == "auto":
                settled.append(found_by)
    fixed, auto = statistics.median(rates["fixed 8"]), statistics.median(rates["auto"])
    difference = max(int(np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).max())
                     for a, b in zip(images["fixed 8"], images["auto"]))
    print(f"{args.model}: {args.images} images, {args.steps} steps, guidance {args.guidance}, "
          f"{torch.get_num_threads()} torch threads, {args.repeat} rounds (median)")
    print(f"  fixed 8  {fixed:6.1f} images/s   rounds {', '.join(f'{r:.1f}' for r in rates['fixed 8'])}")
    print(f"  auto     {auto:6.1f} images/s   rounds {', '.join(f'{r:.1f}' for r in rates['auto'])}")
    print(f"  auto / fixed 8: {auto / fixed:.3f}")
    print(f"  auto settled: {' | '.join(settled)}")
    print(f"  largest pixel difference between the sides: {difference} of 255")


if __name__ == "__main__":
    main()
