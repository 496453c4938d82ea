"""Visual question answering as multiple choice: contrastive (CLIP/SigLIP) or generative.

Both return calibrated probabilities over the given choices, never free text, so every
answer is one of the choices and the same image always gets the same answer.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import torch
from PIL import Image

from ..errors import BackendError
from ._batching import AutoBatch, batched
from ._fingerprint import settings_fingerprint
from ._hf import (
    Loading,
    check_source,
    load_model_and_processor,
    load_pretrained,
    processor_kwargs,
    resolve_device,
    to_device,
)
from .judge_texts import CONTRASTIVE_MODEL_TYPES, DEFAULT_TEMPLATE  # one source (#36)

BLIP_MODEL_TYPES = frozenset({"blip"})


def _features(output: Any) -> torch.Tensor:
    """transformers 5 returns a model output (projected features in ``pooler_output``)."""
    return output if isinstance(output, torch.Tensor) else output.pooler_output


class ClipAnswerer:
    """Zero-shot choice by image-text similarity: ``softmax(logit_scale * cos(image, statement))``.

    The question is not used: a contrastive model compares each image with one statement per
    choice (``template.format(choice=...)`` unless ``statements`` are given). SigLIP's bias
    is the same for every statement, so it cancels in the softmax.
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        model_fingerprint: str,
        template: str = DEFAULT_TEMPLATE,
        device: str | torch.device = "cpu",
        batch_size: int | str = 16,
    ) -> None:
        self.device = resolve_device(device)
        self.model = to_device(model, self.device).eval()
        self.processor = processor
        self.template = template
        self.batch = AutoBatch(batch_size, role="vqa", device=self.device)
        # SigLIP was trained on text padded to max_length; CLIP pools at the EOS token.
        self._padding = "max_length" if model.config.model_type.startswith("siglip") else True
        # Statements repeat across calls (one axis, many prompts): encode each tuple once.
        self._text_cache: dict[tuple[str, ...], torch.Tensor] = {}
        self.fingerprint = settings_fingerprint({
            "model": model_fingerprint,
            "class": type(model).__name__,
            "scoring": "contrastive-softmax",
            "template": template,
        })

    @classmethod
    def from_pretrained(
        cls,
        path_or_id: str | os.PathLike,
        *,
        template: str = DEFAULT_TEMPLATE,
        batch_size: int | str = 16,
        origin: str = "--t2i-vqa",
        **loading: Any,
    ) -> ClipAnswerer:
        """Load a local directory or hub id (``loading``: the ``Loading`` keywords)."""
        from transformers import AutoModel, AutoProcessor

        loaded = load_model_and_processor(
            AutoModel, AutoProcessor, path_or_id, kind="contrastive image-text model",
            origin=origin, loading=Loading(**loading),
        )
        return cls(
            loaded.model, loaded.processor, model_fingerprint=loaded.fingerprint,
            template=template, device=loaded.device, batch_size=batch_size,
        )

    def _text_features(self, statements: list[str]) -> torch.Tensor:
        """Normalised text features, computed once per tuple of statements."""
        key = tuple(statements)
        if key not in self._text_cache:
            self._text_cache[key] = self._encode_text(list(key))
        return self._text_cache[key]

    @torch.no_grad()
    def _encode_text(self, statements: list[str]) -> torch.Tensor:
        inputs = self.processor(text=statements, return_tensors="pt", padding=self._padding, truncation=True)
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        features = _features(self.model.get_text_features(**inputs)).float()
        return torch.nn.functional.normalize(features, dim=-1)

    @torch.no_grad()
    def _image_features(self, images: Sequence[Image.Image]) -> torch.Tensor:
        inputs = self.processor(images=list(images), return_tensors="pt")
        pixels = inputs["pixel_values"].to(self.device, self.model.dtype)
        features = _features(self.model.get_image_features(pixel_values=pixels)).float()
        return torch.nn.functional.normalize(features, dim=-1)

    @torch.no_grad()
    def score(
        self,
        images: list[Image.Image],
        question: str,
        choices: list[str],
        statements: list[str] | None = None,
    ) -> np.ndarray:
        if statements is None:
            statements = [self.template.format(choice=choice) for choice in choices]
        if len(statements) != len(choices):
            raise ValueError(f"{len(statements)} statements for {len(choices)} choices")
        text = self._text_features(list(statements))
        scale = self.model.logit_scale.exp().float()

        def probabilities(batch: list[Image.Image]) -> np.ndarray:
            logits = scale * self._image_features(batch) @ text.T
            return torch.softmax(logits, dim=-1).cpu().numpy()

        rows = batched(list(images), self.batch, probabilities)
        return np.concatenate(rows).astype(np.float64) if rows else np.empty((0, len(choices)))

    def embed_images(self, images: list[Image.Image]) -> np.ndarray:
        """(n, d) unit image embeddings: what CLIPScore, the Vendi score and KID read
        (``metrics.costs``), from the same model that answers."""
        rows = batched(list(images), self.batch, lambda batch: self._image_features(batch).cpu().numpy())
        return np.concatenate(rows).astype(np.float64) if rows else np.empty((0, 0))

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """(n, d) unit text embeddings (a prompt's, for CLIPScore)."""
        return self._encode_text(list(texts)).cpu().numpy().astype(np.float64)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.model).__name__}, template={self.template!r})"


class GenerativeAnswerer:
    """Choice by likelihood under a generative VQA model (BLIP, or any image-text-to-text LM).

    Each choice is scored by the MEAN log-probability of its tokens given image + question
    (for BLIP the end-of-answer token counts as one of them), so long choices are not
    penalised for their length; a softmax over the choices gives the confidence. Nothing is
    sampled, so answers are deterministic and always one of the choices.
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        model_fingerprint: str,
        question_template: str = "{question}",
        device: str | torch.device = "cpu",
        batch_size: int | str = 8,
    ) -> None:
        self.device = resolve_device(device)
        self.model = to_device(model, self.device).eval()
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.question_template = question_template
        self.batch = AutoBatch(batch_size, role="vqa", device=self.device)
        self.is_blip = model.config.model_type in BLIP_MODEL_TYPES
        self.fingerprint = settings_fingerprint({
            "model": model_fingerprint,
            "class": type(model).__name__,
            "scoring": "mean-token-logprob-softmax",
            "question_template": question_template,
            "chat_template": getattr(processor, "chat_template", None),
        })

    @classmethod
    def from_pretrained(
        cls,
        path_or_id: str | os.PathLike,
        *,
        question_template: str = "{question}",
        batch_size: int | str = 8,
        origin: str = "--t2i-vqa",
        model_type: str | None = None,
        **loading: Any,
    ) -> GenerativeAnswerer:
        """Load a local directory or hub id (``loading``: the ``Loading`` keywords)."""
        from transformers import (
            AutoModelForImageTextToText,
            AutoProcessor,
            BlipForQuestionAnswering,
        )

        how = Loading(**loading)
        kind = "visual question answering model"
        if model_type is None:
            check_source(path_or_id, marker="config.json", allow_pickle=how.allow_pickle,
                         **how.source(kind, origin))
            model_type = _read_config(path_or_id, **how.source(kind, origin),
                                      **processor_kwargs(how.options or {})).model_type
        loader = BlipForQuestionAnswering if model_type in BLIP_MODEL_TYPES else AutoModelForImageTextToText
        loaded = load_model_and_processor(loader, AutoProcessor, path_or_id, kind=kind,
                                          origin=origin, loading=how)
        return cls(
            loaded.model, loaded.processor, model_fingerprint=loaded.fingerprint,
            question_template=question_template, device=loaded.device, batch_size=batch_size,
        )

    @torch.no_grad()
    def score(
        self,
        images: list[Image.Image],
        question: str,
        choices: list[str],
        statements: list[str] | None = None,
    ) -> np.ndarray:
        prompt = self.question_template.format(question=question, choices=", ".join(choices))

        def probabilities(batch: list[Image.Image]) -> np.ndarray:
            if self.is_blip:
                logprobs = self._blip_choice_logprobs(batch, prompt, choices)
            else:
                logprobs = self._chat_batch_logprobs(batch, prompt, choices)
            return torch.softmax(logprobs.float(), dim=-1).cpu().numpy()

        rows = batched(list(images), self.batch, probabilities)
        return np.concatenate(rows).astype(np.float64) if rows else np.empty((0, len(choices)))

    @torch.no_grad()
    def _blip_choice_logprobs(self, images: Sequence[Image.Image], prompt: str, choices: list[str]) -> torch.Tensor:
        """(images, choices) mean log-probs: BLIP's answer ranking (``rank_answer`` in the
        original repo), with ``[DEC]`` in place of the answer's first token."""
        model = self.model
        inputs = self.processor(images=list(images), text=[prompt] * len(images), return_tensors="pt", padding=True)
        pixels = inputs["pixel_values"].to(self.device, model.dtype)
        image_embeds = model.vision_model(pixel_values=pixels).last_hidden_state
        image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=self.device)
        question_mask = inputs["attention_mask"].to(self.device)
        question_embeds = model.text_encoder(
            input_ids=inputs["input_ids"].to(self.device),
            attention_mask=question_mask,
            encoder_hidden_states=image_embeds,
            encoder_attention_mask=image_mask,
        ).last_hidden_state

        answers = self.tokenizer(list(choices), return_tensors="pt", padding=True)
        answer_ids = answers["input_ids"].to(self.device)
        answer_ids[:, 0] = model.config.text_config.bos_token_id
        answer_mask = answers["attention_mask"].to(self.device)
        n_images, n_choices = len(images), len(choices)
        # Every (image, choice) pair in one decoder pass: image-major order.
        logits = model.text_decoder(
            input_ids=answer_ids.repeat(n_images, 1),
            attention_mask=answer_mask.repeat(n_images, 1),
            encoder_hidden_states=question_embeds.repeat_interleave(n_choices, dim=0),
            encoder_attention_mask=question_mask.repeat_interleave(n_choices, dim=0),
        ).logits
        targets = answer_ids.repeat(n_images, 1)[:, 1:]
        mask = answer_mask.repeat(n_images, 1)[:, 1:].float()
        token_logprobs = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        mean = (token_logprobs * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        return mean.view(n_images, n_choices)

    @cached_property
    def _keeps_logits(self) -> bool:
        """Whether the model computes logits for the last positions only when asked
        (``logits_to_keep``): a (rows, prompt + choice, vocabulary) tensor otherwise, most
        of it the prompt's (LLaVA's 576 image tokens), never read."""
        return "logits_to_keep" in inspect.signature(self.model.forward).parameters

    def _chat_prompt(self, prompt: str) -> str:
        """The question as the model expects it: its chat template when it has one."""
        if getattr(self.processor, "chat_template", None):
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
            return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        image_token = getattr(self.processor, "image_token", "<image>")
        return f"{image_token}\n{prompt}\n"

    @torch.no_grad()
    def _chat_batch_logprobs(self, images: Sequence[Image.Image], prompt: str,
                             choices: list[str]) -> torch.Tensor:
        """(images, choices) mean log-probs: every image's choices in one forward pass when
        the images share a size and the processor gives one row an image; else an image a
        pass (per-image patch grids, e.g. Qwen2-VL's, or sizes that change the image's
        token count, e.g. LLaVA-NeXT's)."""
        if len(images) > 1 and len({(image.size, image.mode) for image in images}) == 1:
            inputs = self.processor(images=list(images),
                                    text=[self._chat_prompt(prompt)] * len(images),
                                    return_tensors="pt")
            if _one_row_an_image(inputs, len(images)):
                return self._choice_logprobs(inputs, len(images), choices)
        return torch.stack([self._chat_choice_logprobs(image, prompt, choices)
                            for image in images])

    @torch.no_grad()
    def _chat_choice_logprobs(self, image: Image.Image, prompt: str, choices: list[str]) -> torch.Tensor:
        """(choices,) mean log-probs of each choice's tokens after the chat prompt, one pass
        with the choices right-padded (causal attention: padding never reaches the scores)."""
        inputs = self.processor(images=[image], text=[self._chat_prompt(prompt)], return_tensors="pt")
        return self._choice_logprobs(inputs, 1, choices)[0]

    def _choice_logprobs(self, inputs: Any, n_images: int, choices: list[str]) -> torch.Tensor:
        """(images, choices) from the processor's ``inputs`` for ``n_images`` identical
        prompts: one row an (image, choice) pair, image-major."""
        inputs = dict(inputs)
        prompt_ids = inputs.pop("input_ids")
        inputs.pop("attention_mask", None)
        prompt_length = prompt_ids.shape[1]
        eos = self.tokenizer.eos_token_id
        if eos is not None and eos != self.tokenizer.bos_token_id and prompt_ids[0, -1] == eos:
            # the answer continues the prompt: a tokenizer-appended EOS would end it first
            prompt_length -= 1
            prompt_ids = prompt_ids[:, :prompt_length]
            for key, value in inputs.items():
                if isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[1] == prompt_length + 1:
                    inputs[key] = value[:, :prompt_length]
        choice_ids = [self.tokenizer(choice, add_special_tokens=False)["input_ids"] for choice in choices]
        n_choices, longest = len(choices), max(len(ids) for ids in choice_ids)
        rows = n_images * n_choices
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        input_ids = torch.full((rows, prompt_length + longest), pad_id, dtype=torch.long)
        attention_mask = torch.zeros_like(input_ids)
        input_ids[:, :prompt_length] = prompt_ids.repeat_interleave(n_choices, dim=0)
        for row in range(rows):
            ids = choice_ids[row % n_choices]
            input_ids[row, prompt_length:prompt_length + len(ids)] = torch.tensor(ids)
            attention_mask[row, :prompt_length + len(ids)] = 1
        extra = {}
        for key, value in inputs.items():
            if not isinstance(value, torch.Tensor):
                extra[key] = value
            elif value.dim() == 2 and value.shape == (n_images, prompt_length):
                # per-token extras (e.g. mm_token_type_ids): choice tokens are text (0)
                grown = torch.zeros((rows, input_ids.shape[1]), dtype=value.dtype)
                grown[:, :prompt_length] = value.repeat_interleave(n_choices, dim=0)
                extra[key] = grown.to(self.device)
            else:
                # one image: whatever its layout (a patch grid's rows too), once a choice
                repeated = (value.repeat_interleave(n_choices, dim=0) if n_images > 1
                            else value.repeat(n_choices, *([1] * (value.dim() - 1))))
                is_float = repeated.is_floating_point()
                extra[key] = repeated.to(self.device, self.model.dtype) if is_float else repeated.to(self.device)
        if self._keeps_logits:  # logits for the choices' positions only, not the prompt's
            extra["logits_to_keep"] = longest + 1
        logits = self.model(
            input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device), **extra
        ).logits
        logprobs = torch.log_softmax(logits[:, -(longest + 1):-1].float(), dim=-1)
        targets = input_ids[:, prompt_length:].to(self.device)
        mask = attention_mask[:, prompt_length:].to(self.device).float()
        token_logprobs = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        mean = (token_logprobs * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        return mean.view(n_images, n_choices)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.model).__name__})"


def _one_row_an_image(inputs: Any, n_images: int) -> bool:
    """Whether the processor's output for ``n_images`` images is one row an image in every
    tensor, with one prompt (the same tokens) for all: then a pass can carry them all."""
    tensors = [value for value in dict(inputs).values() if isinstance(value, torch.Tensor)]
    if any(value.dim() == 0 or value.shape[0] != n_images for value in tensors):
        return False  # e.g. Qwen2-VL's pixel values: every image's patches, concatenated
    prompt_ids = inputs["input_ids"]
    return bool((prompt_ids == prompt_ids[:1]).all())


def _read_config(path_or_id: str | os.PathLike, *, kind: str, origin: str, revision: str | None,
                 offline: bool, **extra: Any):
    """The model's config (``extra``: ``trust_remote_code`` for a model with its own code)."""
    from transformers import AutoConfig

    return load_pretrained(
        AutoConfig, path_or_id, kind=kind, origin=origin, revision=revision, offline=offline,
        weights=False, **extra)


def load_answerer(
    path_or_id: str | os.PathLike,
    *,
    template: str = DEFAULT_TEMPLATE,
    batch_size: int | str | None = None,
    origin: str = "--t2i-vqa",
    **loading: Any,
) -> ClipAnswerer | GenerativeAnswerer:
    """The right answerer for a model, chosen by its config's ``model_type``:
    CLIP/SigLIP -> contrastive, BLIP -> BLIP VQA, anything else -> image-text-to-text."""
    how = Loading(**loading)
    common = how.source("visual question answering model", origin)
    check_source(path_or_id, marker="config.json", allow_pickle=how.allow_pickle, **common)
    config = _read_config(path_or_id, **common, **processor_kwargs(how.options or {}))
    options = dict(origin=origin, **loading, **({} if batch_size is None else {"batch_size": batch_size}))
    architectures = list(getattr(config, "architectures", None) or [])
    classifier = next((a for a in architectures if a.endswith("ForImageClassification")), None)
    if classifier is not None:
        labels = ", ".join(str(v) for v in (getattr(config, "id2label", None) or {}).values())
        raise BackendError(
            f"{origin}={os.fspath(path_or_id)}: {classifier} is an image classifier (labels: "
            f"{labels or 'none'}), not a visual question answering model: it has no text input, "
            f"so it cannot answer a question nor score a choice outside its labels. Pass it as "
            f"--t2i-classifier=AXIS={os.fspath(path_or_id)} for an axis whose choices are its "
            f"labels, and a CLIP, SigLIP, BLIP VQA or LLaVA-style model as {origin}.")
    if config.model_type in CONTRASTIVE_MODEL_TYPES:
        return ClipAnswerer.from_pretrained(path_or_id, template=template, **options)
    if config.model_type in BLIP_MODEL_TYPES:
        architectures = getattr(config, "architectures", None) or []
        if architectures and "BlipForQuestionAnswering" not in architectures:
            raise BackendError(
                f"{origin}={os.fspath(path_or_id)}: a BLIP {architectures[0]} checkpoint, not a VQA "
                f"one; use a BlipForQuestionAnswering model such as Salesforce/blip-vqa-base."
            )
    return GenerativeAnswerer.from_pretrained(path_or_id, model_type=config.model_type, **options)
