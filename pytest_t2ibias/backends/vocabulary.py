"""What a generator's text encoder can read of a prompt: unknown words and truncation.

A word the tokenizer maps to its unknown token, or one past the encoder's length, never
reaches the model: ``a photo of a pilot`` and ``a photo of a baker`` become the same prompt
and make the same images, and a check on them would judge words the model never saw (issue
#27). The tokenizers are read from the pipeline's folder (``tokenizer``, ``tokenizer_2``,
``tokenizer_3``), without loading any weights, so a warm run and ``--t2i-plan`` can ask too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

TOKENIZER_FOLDERS = ("tokenizer", "tokenizer_2", "tokenizer_3")
_WORD = re.compile(r"[^\W_]+(?:['-][^\W_]+)*")


def unread_words(tokenizer: Any, prompt: str) -> list[str]:
    """The words of ``prompt`` the tokenizer maps (wholly or partly) to its unknown token."""
    unknown = getattr(tokenizer, "unk_token_id", None)
    if unknown is None:  # byte-level BPE (CLIP, T5's sentencepiece with byte fallback): none
        return []
    return [word for word in dict.fromkeys(_WORD.findall(prompt))
            if unknown in tokenizer(word, add_special_tokens=False)["input_ids"]]


def cut_words(tokenizer: Any, prompt: str) -> list[str]:
    """The words past the encoder's length (``model_max_length`` tokens, specials included)."""
    limit = getattr(tokenizer, "model_max_length", None)
    if not isinstance(limit, int) or limit <= 0 or limit > 100_000:  # "no limit" sentinels
        return []
    ids = tokenizer(prompt, truncation=False, verbose=False)["input_ids"]
    if len(ids) <= limit:
        return []
    kept = tokenizer.decode(tokenizer(prompt, truncation=True, max_length=limit)["input_ids"],
                            skip_special_tokens=True)
    kept_words = len(_WORD.findall(kept))
    return _WORD.findall(prompt)[kept_words:]


def prompt_problems(tokenizers: Sequence[tuple[str, Any]], prompts: Iterable[str]
                    ) -> dict[str, str]:
    """Each prompt some tokenizer cannot read whole -> why, in words (the others: absent)."""
    problems: dict[str, str] = {}
    for prompt in dict.fromkeys(prompts):
        said = []
        for name, tokenizer in tokenizers:
            unknown = unread_words(tokenizer, prompt)
            if unknown:
                said.append(f"{', '.join(unknown)} unknown to {name} (read as "
                            f"{getattr(tokenizer, 'unk_token', None) or 'the unknown token'})")
            cut = cut_words(tokenizer, prompt)
            if cut:
                lost = " ".join(cut[:6]) + (" …" if len(cut) > 6 else "")
                said.append(f"cut at {tokenizer.model_max_length} tokens by {name}: "
                            f"{len(cut)} words never read ('{lost}')")
        if said:
            problems[prompt] = "; ".join(dict.fromkeys(said))
    return problems


def pipeline_tokenizers(model: str | os.PathLike, *, offline: bool = True
                        ) -> list[tuple[str, Any]]:
    """The tokenizers a diffusers pipeline folder declares (``model_index.json``), by folder
    name; none for a hub id not on disk (a missing tokenizer is no reason to stop a run)."""
    root = Path(model)
    index = root / "model_index.json"
    if not index.is_file():
        return []
    declared = json.loads(index.read_text())
    from transformers import AutoTokenizer

    found = []
    for folder in TOKENIZER_FOLDERS:
        if isinstance(declared.get(folder), list) and None not in declared[folder] \
                and (root / folder).is_dir():
            found.append((folder, AutoTokenizer.from_pretrained(str(root / folder),
                                                                local_files_only=offline)))
    return found


def pipeline_of_tokenizers(pipeline: Any) -> list[tuple[str, Any]]:
    """The tokenizers of a loaded pipeline (``pipeline.tokenizer``, ``tokenizer_2``, ...)."""
    return [(name, getattr(pipeline, name)) for name in TOKENIZER_FOLDERS
            if getattr(pipeline, name, None) is not None]
