"""An image-classification model as the answerer of one axis (``--t2i-classifier=AXIS=MODEL``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image

from ..errors import BackendError
from ._batching import AutoBatch, batched
from ._fingerprint import settings_fingerprint
from ._hf import Loading, load_model_and_processor, resolve_device, to_device


class ClassifierAnswerer:
    """Softmax over the model's labels, summed onto the axis' choices and renormalised.

    A label counts for a choice when its name (after ``label_map`` renames, e.g.
    ``{"man": "male", "woman": "female"}``) equals the choice, exactly or ignoring case;
    several labels may feed one choice; unmapped labels are left out. The question is
    ignored: the classifier answers one fixed question.
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        model_fingerprint: str,
        label_map: Mapping[str, str] | None = None,
        device: str | torch.device = "cpu",
        batch_size: int | str = 16,
        origin: str = "--t2i-classifier",
    ) -> None:
        self.device = resolve_device(device)
        self.model = to_device(model, self.device).eval()
        self.processor = processor
        self.label_map = dict(label_map or {})
        self.batch = AutoBatch(batch_size, role="classifier", device=self.device)
        self.origin = origin
        id2label = model.config.id2label
        self.labels = [str(id2label[i]) for i in range(len(id2label))]
        self.fingerprint = settings_fingerprint({
            "model": model_fingerprint,
            "class": type(model).__name__,
            "scoring": "softmax-over-mapped-labels",
            "label_map": self.label_map,
        })

    @classmethod
    def from_pretrained(
        cls,
        path_or_id: str | os.PathLike[str],
        *,
        label_map: Mapping[str, str] | None = None,
        batch_size: int | str = 16,
        origin: str = "--t2i-classifier",
        **loading: Any,
    ) -> ClassifierAnswerer:
        """Load a local directory or hub id (``loading``: the ``Loading`` keywords)."""
        from transformers import AutoImageProcessor, AutoModelForImageClassification

        loaded = load_model_and_processor(
            AutoModelForImageClassification, AutoImageProcessor, path_or_id,
            kind="image classification model", origin=origin, loading=Loading(**loading),
        )
        return cls(
            loaded.model, loaded.processor, model_fingerprint=loaded.fingerprint,
            label_map=label_map, device=loaded.device, batch_size=batch_size, origin=origin,
        )

    def label_matrix(self, choices: Sequence[str]) -> np.ndarray:
        """(labels, choices) 0/1 matrix: which model label counts for which choice."""
        renamed = [self.label_map.get(label, label) for label in self.labels]
        matrix = np.zeros((len(self.labels), len(choices)))
        for j, choice in enumerate(choices):
            exact = [i for i, name in enumerate(renamed) if name == choice]
            loose = [i for i, name in enumerate(renamed) if name.lower() == choice.lower()]
            matrix[exact or loose, j] = 1.0
        uncovered = [c for c, column in zip(choices, matrix.T) if not column.any()]
        if uncovered:
            raise BackendError(
                f"{self.origin}: the classifier's labels {self.labels} do not cover the choices "
                f"{list(choices)} (missing: {uncovered}). Rename labels with label_map="
                f"{{'<model label>': '<choice>'}}, or use choices named like the labels."
            )
        return matrix

    @torch.no_grad()
    def score(
        self,
        images: list[Image.Image],
        question: str,
        choices: list[str],
        statements: list[str] | None = None,
    ) -> np.ndarray:
        matrix = self.label_matrix(choices)

        def probabilities(batch: list[Image.Image]) -> np.ndarray:
            inputs = self.processor(images=batch, return_tensors="pt")
            pixels = inputs["pixel_values"].to(self.device, self.model.dtype)
            logits = self.model(pixel_values=pixels).logits.float()
            return torch.softmax(logits, dim=-1).cpu().numpy().astype(np.float64)

        rows = batched(list(images), self.batch, probabilities)
        if not rows:
            return np.empty((0, len(choices)))
        mapped = np.concatenate(rows) @ matrix
        shares: np.ndarray = mapped / mapped.sum(axis=1, keepdims=True)
        return shares

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.model).__name__}, labels={self.labels})"
