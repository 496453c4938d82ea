"""What a generator's text encoder can read of a prompt: unknown words and truncation.

A word the tokenizer maps to its unknown token, or one past the encoder's length, never
reaches the model: ``a photo of a pilot`` and ``a photo of a baker`` become the same prompt
and make the same images, and a check on them would judge words the model never saw (issue
#27). The tokenizers are read from the pipeline's folder (``tokenizer``, ``tokenizer_2``,
``tokenizer_3``), without loading any weights, so a warm run and ``--t2i-plan`` can ask too;
``readings`` keeps the answers, so a warm run does not load the tokenizer either.
"""

from __future__ import annotations

import re
from typing import Any

TOKENIZER_FOLDERS = ("tokenizer", "tokenizer_2", "tokenizer_3")
_WORD = re.compile(r"[^\W_]+(?:['-][^\W_]+)*")


def distinct_words(text: str) -> list[str]:
    """The words of ``text``, each once, in order (the unit ``unread_words`` reports in)."""
    return list(dict.fromkeys(_WORD.findall(text)))


def unread_words(tokenizer: Any, prompt: str) -> list[str]:
    """The words of ``prompt`` the tokenizer maps (wholly or partly) to its unknown token."""
    unknown = getattr(tokenizer, "unk_token_id", None)
    if unknown is None:  # byte-level BPE (CLIP, T5's sentencepiece with byte fallback): none
        return []
    return [word for word in dict.fromkeys(_WORD.findall(prompt))
            if unknown in tokenizer(word, add_special_tokens=False)["input_ids"]]


def max_length(tokenizer: Any) -> int | None:
    """The encoder's length in tokens (``model_max_length``), None for "no limit" sentinels."""
    limit = getattr(tokenizer, "model_max_length", None)
    return limit if isinstance(limit, int) and 0 < limit <= 100_000 else None


def cut_words(tokenizer: Any, prompt: str) -> list[str]:
    """The words past the encoder's length (``model_max_length`` tokens, specials included)."""
    limit = max_length(tokenizer)
    if limit is None:
        return []
    ids = tokenizer(prompt, truncation=False, verbose=False)["input_ids"]
    if len(ids) <= limit:
        return []
    kept = tokenizer.decode(tokenizer(prompt, truncation=True, max_length=limit)["input_ids"],
                            skip_special_tokens=True)
    kept_words = len(_WORD.findall(kept))
    return _WORD.findall(prompt)[kept_words:]


def pipeline_of_tokenizers(pipeline: Any) -> list[tuple[str, Any]]:
    """The tokenizers of a loaded pipeline (``pipeline.tokenizer``, ``tokenizer_2``, ...)."""
    return [(name, getattr(pipeline, name)) for name in TOKENIZER_FOLDERS
            if getattr(pipeline, name, None) is not None]
