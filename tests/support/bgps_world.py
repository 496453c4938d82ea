"""BGPS's bigram world: a scripted LM over a tiny vocabulary, and the search a check's keys ask for."""

from __future__ import annotations

import numpy as np

from pytest_t2ibias.kinds.no_bgps_prompt_exceeds import NoBGPSPromptExceedsParams, search_settings
from pytest_t2ibias.methods.bgps import (
    SearchSettings,
)
from pytest_t2ibias.params import build

VOCAB = ["<eos>", "<bos>", "nurse", "doctor", "with", "intense", "focus", "in", "a", "garden", "male", "smiling"]


ID = {word: i for i, word in enumerate(VOCAB)}


# The next word's probabilities given the last one ("start" = right after the model prompt).
BIGRAMS = {
    "start": {"nurse": 0.5, "doctor": 0.3, "male": 0.2},
    "nurse": {"<eos>": 0.6, "with": 0.3, "smiling": 0.1},
    "doctor": {"<eos>": 0.6, "with": 0.3, "smiling": 0.1},
    "male": {"nurse": 0.5, "doctor": 0.5},
    "with": {"intense": 0.5, "a": 0.5},
    "intense": {"focus": 1.0},
    "focus": {"<eos>": 1.0},
    "a": {"garden": 1.0},
    "garden": {"<eos>": 1.0},
    "smiling": {"<eos>": 1.0},
}


class ScriptedLM:
    """A bigram LM over ``VOCAB``; every word keeps a little probability (a full distribution)."""

    eos_token_id = ID["<eos>"]
    banned_token_ids = (ID["<bos>"],)

    def __init__(self):
        self.calls = 0

    def encode_prefix(self, model_prompt):
        return [ID["<bos>"]]  # the model prompt itself is not in the toy vocabulary

    def next_token_logprobs(self, sequences):
        self.calls += 1
        rows = []
        for sequence in sequences:
            last = "start" if sequence[-1] == ID["<bos>"] else VOCAB[sequence[-1]]
            p = np.full(len(VOCAB), 1e-4)
            for word, q in BIGRAMS.get(last, {"<eos>": 1.0}).items():
                p[ID[word]] = q
            rows.append(np.log(p / p.sum()))
        return np.array(rows)

    def decode(self, token_ids):
        return " ".join(VOCAB[i] for i in token_ids if i not in (ID["<bos>"], ID["<eos>"]))


def kind_settings(**keys) -> SearchSettings:
    """The search a ``no_bgps_prompt_exceeds`` check with these YAML keys asks for: the kind's
    defaults for the rest (``SearchSettings`` has none of its own for what a check chooses)."""
    params = build(NoBGPSPromptExceedsParams,
                   {"target": {"axis": "gender", "value": "male"}, "threshold": 0.5, **keys})
    return search_settings(params)


