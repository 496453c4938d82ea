"""Labelled folders as a generator would hand them to a judge: renders through a model's VAE.

A rendered image shows every attribute crisply; a generated one carries at most what the
pipeline's VAE can encode and decode (toy-sd's 8x8 latent loses the mouth that carries
emotion). Passing a labelled folder through the VAE gives a judge audit with known labels on
images as detailed as generated ones can be.
"""

from __future__ import annotations

import json
from pathlib import Path


def vae_roundtrip_folder(source: str | Path, target: str | Path, pipeline_dir: str | Path,
                         batch_size: int = 64) -> int:
    """Copy the labelled folder ``source`` to ``target`` with every image encoded and decoded
    by the VAE of the diffusers pipeline at ``pipeline_dir`` (the latent's mode, no noise);
    ``index.jsonl`` is copied unchanged. Returns the number of images."""
    import numpy as np
    import torch
    from diffusers import AutoencoderKL
    from PIL import Image

    source, target = Path(source), Path(target)
    vae = AutoencoderKL.from_pretrained(Path(pipeline_dir) / "vae").eval()
    rows = [json.loads(line) for line in (source / "index.jsonl").read_text().splitlines() if line]
    target.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        pixels = np.stack([np.asarray(Image.open(source / row["file"]).convert("RGB")) for row in batch])
        pixels = torch.from_numpy(pixels).permute(0, 3, 1, 2).float() / 127.5 - 1
        with torch.no_grad():
            decoded = vae.decode(vae.encode(pixels).latent_dist.mode()).sample
        decoded = ((decoded + 1) / 2).clamp(0, 1).permute(0, 2, 3, 1).numpy()
        for row, image in zip(batch, decoded):
            Image.fromarray((image * 255).round().astype(np.uint8)).save(target / row["file"])
    (target / "index.jsonl").write_text((source / "index.jsonl").read_text())
    return len(rows)
