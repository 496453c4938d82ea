"""Tiny random-weight models of every architecture the plugin supports, built once a session.

The real classes from tiny configs, saved with ``save_pretrained`` under a session temp dir
(``pytest_t2ibias.testing``), built on first request: tests of one architecture build only it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

GENERATORS = ("sd", "sdxl", "sd3", "sd3-no-t5", "flux", "pixart")
"""The text-to-image architectures: SD 1.x, SDXL, SD3 (with and without T5), Flux, PixArt-alpha."""


def _builders() -> dict:
    from pytest_t2ibias import testing

    return {
        "sd": testing.make_tiny_pipeline,
        "sdxl": testing.make_tiny_sdxl,
        "sd3": testing.make_tiny_sd3,
        "sd3-no-t5": lambda path: testing.make_tiny_sd3(path, t5=False),
        "flux": testing.make_tiny_flux,
        "pixart": testing.make_tiny_pixart,
        "clip": testing.make_tiny_clip,
        "blip": testing.make_tiny_blip_vqa,
        "llava": testing.make_tiny_llava,
        "vit-gender": lambda path: testing.make_tiny_classifier(path, ["male", "female"]),
        "gpt2": testing.make_tiny_causal_lm,
        "llama-chat": testing.make_tiny_chat_lm,
    }


def import_every_class() -> None:
    """Import every class the zoo's models load with, once, before a pytester run does: an
    in-process run forgets the modules first imported inside it, and a pipeline loaded after
    that would meet a second copy of its component classes (and torch's registrations
    cannot run twice in one process)."""
    import diffusers
    import transformers

    for name in ("StableDiffusionPipeline", "StableDiffusionXLPipeline", "StableDiffusion3Pipeline",
                 "FluxPipeline", "PixArtAlphaPipeline", "UNet2DConditionModel", "SD3Transformer2DModel",
                 "FluxTransformer2DModel", "PixArtTransformer2DModel", "AutoencoderKL", "DDIMScheduler",
                 "EulerDiscreteScheduler", "FlowMatchEulerDiscreteScheduler"):
        getattr(diffusers, name)
    for name in ("CLIPTextModel", "CLIPTextModelWithProjection", "T5EncoderModel", "CLIPModel",
                 "PreTrainedTokenizerFast", "BlipForQuestionAnswering", "LlavaForConditionalGeneration",
                 "ViTForImageClassification", "GPT2LMHeadModel", "LlamaForCausalLM", "AutoModelForCausalLM",
                 "AutoTokenizer", "AutoProcessor", "CLIPProcessor", "BlipProcessor", "LlavaProcessor",
                 "ViTImageProcessor", "CLIPImageProcessor"):
        getattr(transformers, name)


class TinyModels:
    """``model_zoo["sdxl"]`` -> the saved model's directory, built the first time."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: dict[str, Path] = {}

    def __getitem__(self, name: str) -> Path:
        if name not in self._paths:
            import torch

            builders = _builders()
            if name not in builders:
                raise KeyError(f"no tiny model {name!r}; known: {', '.join(builders)}")
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                self._paths[name] = Path(builders[name](self.root / name))
            finally:
                torch.set_num_threads(threads)
        return self._paths[name]


@pytest.fixture(scope="session")
def model_zoo(tmp_path_factory) -> TinyModels:
    return TinyModels(tmp_path_factory.mktemp("tiny-models"))
