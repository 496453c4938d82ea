"""Tiny random-weight models built from config, for tests that exercise the real loading code.

Each factory writes a ``save_pretrained`` directory (safetensors weights, a local word-level
tokenizer) and returns its path; nothing is downloaded. The weights are random but fixed:
``torch.manual_seed(seed)`` before each part, like diffusers' ``get_dummy_components``.
The models produce meaningless outputs quickly: use them to test plumbing, not bias.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import torch

from .tokenizer import build_word_tokenizer

__all__ = [
    "DEFAULT_WORDS",
    "make_tiny_blip_vqa",
    "make_tiny_causal_lm",
    "make_tiny_chat_lm",
    "make_tiny_classifier",
    "make_tiny_clip",
    "make_tiny_flux",
    "make_tiny_llava",
    "make_tiny_pipeline",
    "make_tiny_pixart",
    "make_tiny_sd3",
    "make_tiny_sdxl",
    "torch_threads",
]

DEFAULT_WORDS = (
    "a an the photo picture of person man woman male female doctor nurse teacher musician "
    "ceo engineer child old young is there what who in image gender age yes no"
).split()
"""Vocabulary of the tiny models' tokenizers; other words map to ``<unk>``."""

TINY_IMAGE_SIZE = 32


def _vocabulary(words: Iterable[str] | None, extra: Iterable[str] = ()) -> list[str]:
    return list(DEFAULT_WORDS if words is None else words) + list(extra)


def make_tiny_pipeline(
    path: str | os.PathLike,
    words: Iterable[str] | None = None,
    seed: int = 0,
    scheduler: str = "ddim",
) -> Path:
    """A ``StableDiffusionPipeline`` making 16x16 images (8x8 latents) in milliseconds a step.

    ``scheduler`` is ``"ddim"`` (deterministic given the initial noise) or ``"euler_ancestral"``
    (draws fresh noise each step from the per-image generators).
    """
    from diffusers import (
        AutoencoderKL,
        DDIMScheduler,
        EulerAncestralDiscreteScheduler,
        StableDiffusionPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    tokenizer = build_word_tokenizer(_vocabulary(words), model_max_length=16)
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        block_out_channels=(8, 16),
        layers_per_block=1,
        norm_num_groups=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=2,
    )
    schedule = dict(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", steps_offset=1)
    noise_scheduler: DDIMScheduler | EulerAncestralDiscreteScheduler
    if scheduler == "ddim":
        noise_scheduler = DDIMScheduler(clip_sample=False, set_alpha_to_one=False, **schedule)
    elif scheduler == "euler_ancestral":
        noise_scheduler = EulerAncestralDiscreteScheduler(**schedule)
    else:
        raise ValueError(f"scheduler must be 'ddim' or 'euler_ancestral', got {scheduler!r}")
    torch.manual_seed(seed)
    vae = AutoencoderKL(
        sample_size=16,
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        block_out_channels=(8, 16),
        norm_num_groups=4,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
    )
    torch.manual_seed(seed)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_attention_heads=2,
        num_hidden_layers=2,
        max_position_embeddings=16,
        projection_dim=16,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    ))
    pipeline = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=noise_scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    path = Path(path)
    # DiffusionPipeline defines it; mypy loses it among diffusers' untyped loader mixins
    pipeline.save_pretrained(path, safe_serialization=True)  # type: ignore[attr-defined]
    return path


def _clip_text_encoder(tokenizer, seed: int, *, projection: bool = False, hidden_size: int = 16):
    """A 2-layer CLIP text encoder over ``tokenizer`` (with the projection SDXL's second and
    SD3's two encoders have)."""
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    config = CLIPTextConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_attention_heads=2, num_hidden_layers=2, max_position_embeddings=tokenizer.model_max_length,
        projection_dim=hidden_size, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    return (CLIPTextModelWithProjection if projection else CLIPTextModel)(config)


def _t5_encoder(tokenizer, seed: int, d_model: int = 32):
    """A 1-layer T5 encoder (SD3's third, Flux's second and PixArt's only text encoder)."""
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(seed)
    # transformers' typed config signatures omit the PretrainedConfig keywords they accept
    return T5EncoderModel(T5Config(  # type: ignore[call-arg]
        vocab_size=len(tokenizer), d_model=d_model, d_kv=8, d_ff=2 * d_model, num_layers=1,
        num_heads=4, relative_attention_num_buckets=8, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id,
    ))


def _tiny_vae(seed: int, *, latent_channels: int = 4, blocks: int = 2, flow: bool = False):
    """An ``AutoencoderKL`` with ``blocks`` levels (a vae_scale_factor of 2 ** (blocks - 1));
    ``flow``: no quant convs and SD3/Flux's shift and scale."""
    from diffusers import AutoencoderKL

    extra = dict(use_quant_conv=False, use_post_quant_conv=False, shift_factor=0.0609,
                 scaling_factor=1.5035) if flow else {}
    torch.manual_seed(seed)
    return AutoencoderKL(
        sample_size=32, in_channels=3, out_channels=3, latent_channels=latent_channels,
        block_out_channels=tuple(8 * 2 ** i for i in range(blocks))[:blocks] if blocks > 1 else (8,),
        layers_per_block=1, norm_num_groups=4,
        down_block_types=("DownEncoderBlock2D",) * blocks, up_block_types=("UpDecoderBlock2D",) * blocks,
        **extra,
    )


def _save_pipeline(pipeline, path: str | os.PathLike) -> Path:
    path = Path(path)
    pipeline.save_pretrained(path, safe_serialization=True)
    return path


def make_tiny_sdxl(path: str | os.PathLike, words: Iterable[str] | None = None, seed: int = 0) -> Path:
    """A ``StableDiffusionXLPipeline``: two CLIP encoders (the second with a projection, whose
    pooled output and the size ids are the UNet's ``added_cond_kwargs``), 16x16 images."""
    from diffusers import (
        EulerDiscreteScheduler,
        StableDiffusionXLPipeline,
        UNet2DConditionModel,
    )

    tokenizer = build_word_tokenizer(_vocabulary(words), model_max_length=16)
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=(8, 16), layers_per_block=1,
        norm_num_groups=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), attention_head_dim=2,
        use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=8,
        projection_class_embeddings_input_dim=6 * 8 + 16, cross_attention_dim=32,
    )
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                       steps_offset=1, timestep_spacing="leading")
    pipeline = StableDiffusionXLPipeline(
        unet=unet, vae=_tiny_vae(seed), scheduler=scheduler,
        text_encoder=_clip_text_encoder(tokenizer, seed), tokenizer=tokenizer,
        text_encoder_2=_clip_text_encoder(tokenizer, seed + 1, projection=True), tokenizer_2=tokenizer,
        force_zeros_for_empty_prompt=True,
    )
    return _save_pipeline(pipeline, path)


def make_tiny_sd3(path: str | os.PathLike, words: Iterable[str] | None = None, seed: int = 0,
                  t5: bool = True) -> Path:
    """A ``StableDiffusion3Pipeline`` (MMDiT over two CLIP encoders and, with ``t5``, a T5
    encoder; without it the pipeline pads with zeros, as SD3 saved without T5 does)."""
    from diffusers import (
        FlowMatchEulerDiscreteScheduler,
        SD3Transformer2DModel,
        StableDiffusion3Pipeline,
    )

    tokenizer = build_word_tokenizer(_vocabulary(words), model_max_length=16)
    torch.manual_seed(seed)
    transformer = SD3Transformer2DModel(
        sample_size=8, patch_size=2, in_channels=4, out_channels=4, num_layers=3, attention_head_dim=8,
        num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=16, pooled_projection_dim=32,
        pos_embed_max_size=16,
    )
    pipeline = StableDiffusion3Pipeline(
        transformer=transformer, vae=_tiny_vae(seed, flow=True), scheduler=FlowMatchEulerDiscreteScheduler(),
        text_encoder=_clip_text_encoder(tokenizer, seed, projection=True), tokenizer=tokenizer,
        text_encoder_2=_clip_text_encoder(tokenizer, seed + 1, projection=True), tokenizer_2=tokenizer,
        text_encoder_3=_t5_encoder(tokenizer, seed + 2) if t5 else None,
        tokenizer_3=tokenizer if t5 else None,
    )
    return _save_pipeline(pipeline, path)


def make_tiny_flux(path: str | os.PathLike, words: Iterable[str] | None = None, seed: int = 0) -> Path:
    """A ``FluxPipeline`` (guidance-distilled: the guidance is an input of the transformer, not
    a second pass; one double-stream and two single-stream blocks, CLIP + T5)."""
    from diffusers import (
        FlowMatchEulerDiscreteScheduler,
        FluxPipeline,
        FluxTransformer2DModel,
    )

    tokenizer = build_word_tokenizer(_vocabulary(words), model_max_length=16)
    torch.manual_seed(seed)
    transformer = FluxTransformer2DModel(
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=2, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=16,
        guidance_embeds=True, axes_dims_rope=[4, 4, 8],
    )
    pipeline = FluxPipeline(
        transformer=transformer, vae=_tiny_vae(seed, latent_channels=4, flow=True),
        scheduler=FlowMatchEulerDiscreteScheduler(),
        text_encoder=_clip_text_encoder(tokenizer, seed), tokenizer=tokenizer,
        text_encoder_2=_t5_encoder(tokenizer, seed + 1), tokenizer_2=tokenizer,
    )
    return _save_pipeline(pipeline, path)


def make_tiny_pixart(path: str | os.PathLike, words: Iterable[str] | None = None, seed: int = 0) -> Path:
    """A ``PixArtAlphaPipeline`` (DiT over a T5 encoder). Its ``sample_size`` is 32, the least
    its resolution binning accepts (it renders at 256 px bins and resizes to the size asked)."""
    from diffusers import DDIMScheduler, PixArtAlphaPipeline, PixArtTransformer2DModel

    tokenizer = build_word_tokenizer(_vocabulary(words), model_max_length=16)
    torch.manual_seed(seed)
    transformer = PixArtTransformer2DModel(
        sample_size=32, num_layers=2, patch_size=4, attention_head_dim=8, num_attention_heads=2,
        caption_channels=32, in_channels=4, cross_attention_dim=16, out_channels=8,
        attention_bias=True, activation_fn="gelu-approximate", num_embeds_ada_norm=1000,
        norm_type="ada_norm_single", norm_elementwise_affine=False, norm_eps=1e-6,
    )
    pipeline = PixArtAlphaPipeline(
        transformer=transformer, vae=_tiny_vae(seed, blocks=4), scheduler=DDIMScheduler(),
        text_encoder=_t5_encoder(tokenizer, seed), tokenizer=tokenizer,
    )
    return _save_pipeline(pipeline, path)


def _vision_config(**overrides) -> dict:
    config = dict(
        hidden_size=16,
        intermediate_size=32,
        num_attention_heads=2,
        num_hidden_layers=1,
        image_size=TINY_IMAGE_SIZE,
        patch_size=8,
    )
    config.update(overrides)
    return config


def _text_config(tokenizer, **overrides) -> dict:
    config = dict(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_attention_heads=2,
        num_hidden_layers=1,
        max_position_embeddings=tokenizer.model_max_length,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    config.update(overrides)
    return config


def _image_processor_size() -> dict:
    return dict(
        size={"shortest_edge": TINY_IMAGE_SIZE},
        crop_size={"height": TINY_IMAGE_SIZE, "width": TINY_IMAGE_SIZE},
    )


def make_tiny_clip(path: str | os.PathLike, words: Iterable[str] | None = None, seed: int = 0) -> Path:
    """A ``CLIPModel`` + ``CLIPProcessor`` (word-level tokenizer, 32x32 images)."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    tokenizer = build_word_tokenizer(_vocabulary(words), model_max_length=16)
    config = CLIPConfig(
        text_config=_text_config(tokenizer),
        vision_config=_vision_config(),
        projection_dim=16,
    )
    torch.manual_seed(seed)
    model = CLIPModel(config)
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(**_image_processor_size()), tokenizer=tokenizer)
    path = Path(path)
    model.save_pretrained(path, safe_serialization=True)
    processor.save_pretrained(path)
    return path


def make_tiny_blip_vqa(path: str | os.PathLike, words: Iterable[str] | None = None, seed: int = 0) -> Path:
    """A ``BlipForQuestionAnswering`` + ``BlipProcessor``; the decoder starts from ``<bos>``
    and stops at ``<eos>`` (BLIP's ``[DEC]`` and ``[SEP]``)."""
    from transformers import (
        BlipConfig,
        BlipForQuestionAnswering,
        BlipImageProcessor,
        BlipProcessor,
    )

    tokenizer = build_word_tokenizer(_vocabulary(words), model_max_length=32)
    # BLIP's default init (std 0.02) leaves random tiny models blind to the image; a wider
    # init makes answers depend on it, so tests can tell images apart.
    config = BlipConfig(
        text_config=_text_config(
            tokenizer, sep_token_id=tokenizer.eos_token_id, encoder_hidden_size=16, initializer_range=0.5
        ),
        vision_config=_vision_config(initializer_range=0.5),
        projection_dim=16,
        initializer_range=0.5,
    )
    torch.manual_seed(seed)
    model = BlipForQuestionAnswering(config)
    image_processor = BlipImageProcessor(size={"height": TINY_IMAGE_SIZE, "width": TINY_IMAGE_SIZE})
    processor = BlipProcessor(image_processor=image_processor, tokenizer=tokenizer)
    path = Path(path)
    model.save_pretrained(path, safe_serialization=True)
    processor.save_pretrained(path)
    return path


LLAVA_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: "
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image> "
    "{% else %}{{ part['text'] }}{% endif %}{% endfor %} {% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
"""A minimal chat template: ``user: <image> {question} assistant: ``."""


def make_tiny_llava(path: str | os.PathLike, words: Iterable[str] | None = None, seed: int = 0) -> Path:
    """A ``LlavaForConditionalGeneration`` (tiny CLIP vision tower + 1-layer Llama) with a
    ``LlavaProcessor`` and chat template: the ``AutoModelForImageTextToText`` path."""
    from transformers import (
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = build_word_tokenizer(_vocabulary(words, ["user", "assistant"]), model_max_length=128)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    text_config = _text_config(tokenizer, model_type="llama", num_key_value_heads=2)
    config = LlavaConfig(
        vision_config=dict(model_type="clip_vision_model", **_vision_config()),
        text_config=text_config,
        # one token's id: transformers types it int | list[int] whatever it is given
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),  # type: ignore[arg-type]
        vision_feature_layer=-1,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(**_image_processor_size()),
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's class token, dropped by "default"
        chat_template=LLAVA_CHAT_TEMPLATE,
    )
    path = Path(path)
    model.save_pretrained(path, safe_serialization=True)
    processor.save_pretrained(path)
    return path


def make_tiny_classifier(
    path: str | os.PathLike, labels: Iterable[str] | Mapping[int, str], seed: int = 0
) -> Path:
    """A ``ViTForImageClassification`` over ``labels`` (its ``config.id2label``)."""
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    id2label = dict(labels) if isinstance(labels, Mapping) else dict(enumerate(labels))
    # transformers' typed config signatures omit the PretrainedConfig keywords they accept
    config = ViTConfig(  # type: ignore[call-arg]
        **_vision_config(),
        num_labels=len(id2label),
        id2label=id2label,
        label2id={label: i for i, label in id2label.items()},
    )
    torch.manual_seed(seed)
    model = ViTForImageClassification(config)
    image_processor = ViTImageProcessor(size={"height": TINY_IMAGE_SIZE, "width": TINY_IMAGE_SIZE})
    path = Path(path)
    model.save_pretrained(path, safe_serialization=True)
    image_processor.save_pretrained(path)
    return path


def make_tiny_causal_lm(path: str | os.PathLike, words: Iterable[str] | None = None, seed: int = 0) -> Path:
    """A 2-layer ``GPT2LMHeadModel`` with a word-level tokenizer."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = build_word_tokenizer(_vocabulary(words), model_max_length=64)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=64,
        n_embd=16,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    path = Path(path)
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


CHAT_TEMPLATE = (
    "{% for message in messages %}<bos>[{{ message['role'] }}] {{ message['content'] }}<eos>"
    "{% endfor %}{% if add_generation_prompt %}<bos>[assistant] {% endif %}"
)
"""A Llama-style chat template: ``<bos>[user] ...<eos><bos>[assistant] ``."""


def make_tiny_chat_lm(path: str | os.PathLike, corpus: Iterable[str] = (), seed: int = 0) -> Path:
    """A 2-layer ``LlamaForCausalLM`` whose tokenizer has a chat template (an instruction-tuned
    Llama or Mistral, in miniature), 1024 positions. Its byte-level BPE tokenizer is trained
    on ``corpus`` and the default words, so any text (JSON included) round-trips exactly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<pad>", "<unk>", "<bos>", "<eos>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator([" ".join(DEFAULT_WORDS), *corpus], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", unk_token="<unk>",
                                        bos_token="<bos>", eos_token="<eos>", model_max_length=1024)
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    path = Path(path)
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


@contextmanager
def torch_threads(count: int = 1) -> Iterator[None]:
    """Run torch ops on ``count`` threads, then restore the previous number.

    Tiny models gain nothing from threads, and on a busy shared machine OpenMP threads
    waiting for each other make them many times slower.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
