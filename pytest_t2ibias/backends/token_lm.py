"""A token-level view of a ``CausalLM`` for beam search (BGPS): next-token log-probs of id prefixes.

``CausalLM.next_token_logprobs`` takes texts; beam search extends token ids, and re-encoding
decoded text need not give the same ids back (BPE merges), so this adapter works on ids.
It leaves ``CausalLM`` untouched and uses only its public attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class BeamSearchLM:
    """Wraps a ``CausalLM``: ids in, (sequences, vocab) log-probabilities out.

    ``instruction`` is put before the model prompt (BGPS instructs the LLM to write a neutral
    prompt, seeds/001 App. C): through the tokenizer's chat template when it has one (the
    model prompt becomes the start of the assistant's answer), else as plain text with the
    model prompt on a line of its own (a base LM's prefix form).
    """

    def __init__(self, lm: Any, *, instruction: str = "", kv_cache: bool = True,
                 max_new_tokens: int = 0) -> None:
        self.lm = lm
        self.max_new_tokens = max_new_tokens
        """The search's longest continuation: the context must hold it after the prefix."""
        self.kv_cache = kv_cache
        """Reuse the context's keys and values (``CausalLM.next_token_logprobs_of_ids``)."""
        self._context: tuple[int, ...] = ()
        self.tokenizer = lm.tokenizer
        self.instruction = instruction
        self.eos_token_id = self.tokenizer.eos_token_id
        special = {self.tokenizer.bos_token_id, self.tokenizer.pad_token_id, self.tokenizer.unk_token_id}
        special |= set(getattr(self.tokenizer, "all_special_ids", ()))
        self.banned_token_ids = sorted(i for i in special if i is not None and i != self.eos_token_id)
        """Special tokens a prompt never contains (BOS, padding, unknown)."""
        self.fingerprint = getattr(lm, "fingerprint", None)

    def encode_prefix(self, model_prompt: str) -> list[int]:
        """Ids of instruction + model prompt, ready to be continued (remembered: the context
        whose keys and values the search reuses)."""
        ids = list(self._encode_prefix(model_prompt))
        context = getattr(self.lm, "context_length", None)
        if isinstance(context, int) and len(ids) + self.max_new_tokens > context:
            from ..errors import BackendError

            raise BackendError(
                f"{type(getattr(self.lm, 'model', self.lm)).__name__} attends over {context} "
                f"tokens, but the search's instruction and model prompt take {len(ids)} and its "
                f"prompts up to {self.max_new_tokens} more. Use an LLM with a longer context (--t2i-llm) or a "
                f"shorter instruction.")
        self._context = tuple(ids)
        return ids

    def _encode_prefix(self, model_prompt: str) -> list[int]:
        if not self.instruction:
            return self.lm.encode_prefix(model_prompt)
        if getattr(self.tokenizer, "chat_template", None):
            context = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": self.instruction}], tokenize=False, add_generation_prompt=True,
            )
            ids = list(self.tokenizer(context + model_prompt, add_special_tokens=False)["input_ids"])
            return ids
        return self.lm.encode_prefix(f"{self.instruction}\n{model_prompt}")

    def next_token_logprobs(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """(sequences, vocab) natural-log probabilities of the token after each id sequence."""
        import torch

        if self.kv_cache and self._context and hasattr(self.lm, "next_token_logprobs_of_ids"):
            return self.lm.next_token_logprobs_of_ids([list(s) for s in sequences], cached_prefix=self._context)

        rows = []
        for start in range(0, len(sequences), self.lm.batch_size):
            batch = [list(s) for s in sequences[start:start + self.lm.batch_size]]
            longest = max(len(s) for s in batch)
            input_ids = torch.full((len(batch), longest), self.lm.pad_token_id, dtype=torch.long)
            attention_mask = torch.zeros_like(input_ids)
            for row, ids in enumerate(batch):  # right padding: causal attention never sees it
                input_ids[row, :len(ids)] = torch.tensor(ids, dtype=torch.long)
                attention_mask[row, :len(ids)] = 1
            with torch.no_grad():
                logits = self.lm.model(input_ids=input_ids.to(self.lm.device),
                                       attention_mask=attention_mask.to(self.lm.device)).logits.float()
            last = attention_mask.sum(-1) - 1
            final = logits[torch.arange(len(batch)), last.to(logits.device)]
            rows.append(torch.log_softmax(final, dim=-1).cpu().numpy())
        return np.concatenate(rows).astype(np.float64) if rows else np.empty((0, len(self.tokenizer)))

    def decode(self, token_ids: Sequence[int]) -> str:
        """The continuation's text (special tokens dropped)."""
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.lm!r})"
