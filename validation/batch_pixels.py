"""How far an image depends on the batch it was drawn in (issue #47, item 11).

Every image's noise comes from its own CPU ``torch.Generator`` (``backends.generator``), so
the batch changes no random number; the batched UNet and VAE forwards still round in another
order (oneDNN/MKL pick their blocking by batch size), so a pixel at a rounding boundary can
land one level apart. This draws the same requests at batch 1 and at ``--batch`` on toy-sd and
says how many images, pixels and levels differ, and where: the latents (the UNet's loop) and
the VAE's decode of the same latents.

    python validation/batch_pixels.py --images 64 --batch 8 --threads 1
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "fixtures" / "toy-sd"))
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends.generator import DiffusersGenerator

    subjects = ["doctor", "nurse", "musician", "farmer"]
    requests = [ImageRequest(prompt=f"a photo of a {subjects[i % len(subjects)]}", seed=0,
                             index=i, steps=args.steps, guidance=2.0)
                for i in range(args.images)]
    drawn = {}
    for size in (1, args.batch):
        generator = DiffusersGenerator.from_pretrained(args.model, batch_size=size, device="cpu")
        drawn[size] = [np.asarray(image, dtype=np.int16) for image in generator.generate(requests)]
    levels = [int(np.abs(a - b).max()) for a, b in zip(drawn[1], drawn[args.batch])]
    pixels = [int((a != b).any(axis=-1).sum()) for a, b in zip(drawn[1], drawn[args.batch])]

    pipeline = generator.pipeline
    latents = {}
    for size in (1, args.batch):
        chunks = []
        for start in range(0, args.images, size):
            chunk = requests[start:start + size]
            chunks.append(pipeline(prompt=[r.prompt for r in chunk], output_type="latent",
                                   generator=[torch.Generator("cpu").manual_seed(r.noise_seed)
                                              for r in chunk],
                                   num_inference_steps=args.steps, guidance_scale=2.0).images)
        latents[size] = torch.cat(chunks)
    scaled = latents[args.batch] / pipeline.vae.config.scaling_factor
    with torch.no_grad():
        alone = torch.cat([pipeline.vae.decode(scaled[i:i + 1]).sample
                           for i in range(args.images)])
        together = torch.cat([pipeline.vae.decode(scaled[i:i + args.batch]).sample
                              for i in range(0, args.images, args.batch)])
    result = {
        "model": Path(args.model).name, "images": args.images, "batch": args.batch,
        "threads": args.threads, "torch": torch.__version__,
        "images_differing": sum(level > 0 for level in levels),
        "pixels_differing": sum(pixels), "pixels": args.images * drawn[1][0].shape[0]
        * drawn[1][0].shape[1], "most_levels_apart": max(levels),
        "latents_max_abs_difference": float((latents[1] - latents[args.batch]).abs().max()),
        "vae_decode_max_abs_difference": float((alone - together).abs().max()),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
