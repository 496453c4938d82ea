"""A causal language model for prompt search (BGPS), OpenBias proposals and perplexity."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..errors import BackendError
from ._fingerprint import settings_fingerprint
from ._hf import Loading, load_model_and_processor, resolve_device, to_device


@dataclass(frozen=True)
class Reply:
    """An LLM's answer to an instruction, and whether the token budget cut it short."""

    text: str
    cut: bool
    new_tokens: int


class CausalLM:
    """``AutoModelForCausalLM`` + tokenizer; every method is deterministic.

    Texts are encoded as the tokenizer does (with its special tokens), with the BOS token
    put in front when the tokenizer adds none, so the first word is scored too.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        model_fingerprint: str,
        device: str | torch.device = "cpu",
        batch_size: int = 16,
    ) -> None:
        self.device = resolve_device(device)
        self.model = to_device(model, self.device).eval()
        self.tokenizer = tokenizer
        self.batch_size = max(1, batch_size)
        # Padding is masked out everywhere, so any id will do when the tokenizer has none.
        self.pad_token_id = next(
            i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0) if i is not None
        )
        self.fingerprint = settings_fingerprint({
            "model": model_fingerprint,
            "class": type(model).__name__,
        })

    @classmethod
    def from_pretrained(
        cls,
        path_or_id: str | os.PathLike[str],
        *,
        batch_size: int = 16,
        origin: str = "--t2i-llm",
        **loading: Any,
    ) -> CausalLM:
        """Load a local directory or hub id (``loading``: the ``Loading`` keywords)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        loaded = load_model_and_processor(
            AutoModelForCausalLM, AutoTokenizer, path_or_id, kind="causal language model",
            origin=origin, loading=Loading(**loading),
        )
        return cls(loaded.model, loaded.processor, model_fingerprint=loaded.fingerprint,
                   device=loaded.device, batch_size=batch_size)

    @property
    def context_length(self) -> int | None:
        """The most tokens the model attends over (its position table), when its config says;
        a prompt plus its continuation must fit (toy-lm has 768, toy-lm-eval 32)."""
        config = self.model.config
        for name in ("max_position_embeddings", "n_positions", "n_ctx", "seq_length"):
            value = getattr(config, name, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes as a prefix to be continued (BOS included); measuring a text
        too long for the model is the point, so the tokenizer's warning is off."""
        return len(self.encode_prefix(text, verbose=False))

    def _within_context(self, prompt_tokens: int, max_new_tokens: int) -> int:
        """The new tokens a reply may take: ``max_new_tokens``, less where the model's context
        ends first (a reply cut there counts as cut); a prompt that fills the context alone is
        a ``BackendError`` naming the model's class and the numbers (past its position table
        a model raises an IndexError from inside, or reads garbage)."""
        context = self.context_length
        if context is None:
            return max_new_tokens
        if prompt_tokens >= context:
            raise BackendError(
                f"{type(self.model).__name__} attends over {context} tokens (its config's "
                f"position table), but this instruction alone takes {prompt_tokens}: it lacks "
                f"the context the task needs. Use a causal LM with a context longer than "
                f"{prompt_tokens} tokens (--t2i-llm).")
        return min(max_new_tokens, context - prompt_tokens)

    # -- encoding ---------------------------------------------------------------------

    def encode(self, text: str, *, verbose: bool = True) -> list[int]:
        """Token ids of a whole text, starting with BOS when the tokenizer has one."""
        ids = list(self.tokenizer(text, add_special_tokens=True, verbose=verbose)["input_ids"])
        bos = self.tokenizer.bos_token_id
        if bos is not None and (not ids or ids[0] != bos):
            ids.insert(0, bos)
        return ids

    def encode_prefix(self, text: str, *, verbose: bool = True) -> list[int]:
        """Token ids of a text to be continued: as :meth:`encode`, without a trailing EOS."""
        ids = self.encode(text, verbose=verbose)
        eos = self.tokenizer.eos_token_id
        if len(ids) > 1 and eos is not None and ids[-1] == eos and eos != self.tokenizer.bos_token_id:
            ids.pop()
        return ids

    def _right_padded(self, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right padding: with causal attention, padding after a text never changes its logits."""
        longest = max(len(ids) for ids in sequences)
        input_ids = torch.full((len(sequences), longest), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros_like(input_ids)
        for row, ids in enumerate(sequences):
            input_ids[row, :len(ids)] = torch.tensor(ids, dtype=torch.long)
            attention_mask[row, :len(ids)] = 1
        return input_ids.to(self.device), attention_mask.to(self.device)

    @torch.no_grad()
    def _logits(self, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        input_ids, attention_mask = self._right_padded(sequences)
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask).logits.float()
        return logits, input_ids, attention_mask

    # -- scoring ----------------------------------------------------------------------

    def token_log_likelihoods(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per text: the summed log-probability of every token after the first, and how many."""
        sums, counts = [], []
        for start in range(0, len(texts), self.batch_size):
            sequences = [self.encode(text) for text in texts[start:start + self.batch_size]]
            logits, input_ids, attention_mask = self._logits(sequences)
            logprobs = torch.log_softmax(logits[:, :-1], dim=-1)
            token_logprobs = logprobs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
            mask = attention_mask[:, 1:].float()
            sums.append((token_logprobs * mask).sum(-1).cpu().numpy())
            counts.append(mask.sum(-1).cpu().numpy())
        if not sums:
            return np.empty(0), np.empty(0)
        return np.concatenate(sums).astype(np.float64), np.concatenate(counts).astype(np.int64)

    def log_likelihood(self, texts: list[str]) -> np.ndarray:
        """Sum of token log-probabilities (natural log) of each text."""
        return self.token_log_likelihoods(texts)[0]

    def perplexity(self, texts: list[str]) -> np.ndarray:
        """``exp(-mean token log-probability)`` of each text."""
        sums, counts = self.token_log_likelihoods(texts)
        perplexities: np.ndarray = np.exp(-sums / np.maximum(counts, 1))
        return perplexities

    def next_token_logprobs(self, prefixes: list[str]) -> np.ndarray:
        """(prefixes, vocab) log-probabilities of the next token, for beam search."""
        rows = []
        for start in range(0, len(prefixes), self.batch_size):
            sequences = [self.encode_prefix(p) for p in prefixes[start:start + self.batch_size]]
            logits, _, attention_mask = self._logits(sequences)
            last = attention_mask.sum(-1) - 1
            final = logits[torch.arange(len(sequences), device=logits.device), last]
            rows.append(torch.log_softmax(final, dim=-1).cpu().numpy())
        return np.concatenate(rows).astype(np.float64) if rows else np.empty((0, len(self.tokenizer)))

    # -- beam search over ids, with the shared prefix's keys and values cached ---------------

    @torch.no_grad()
    def _prefix_state(self, prefix: tuple[int, ...]) -> tuple[Any, torch.Tensor]:
        """The prefix's ``past_key_values`` and its last position's logits, computed once
        (the most recent prefix kept: one search continues one context)."""
        cached = getattr(self, "_prefix_cache", None)
        if cached is None or cached[0] != prefix:
            output = self.model(input_ids=torch.tensor([list(prefix)], device=self.device), use_cache=True)
            cached = (prefix, _cache_of(output), output.logits[0, -1].float())
            self._prefix_cache = cached
        return cached[1], cached[2]

    @torch.no_grad()
    def next_token_logprobs_of_ids(self, sequences: list[list[int]], *,
                                   cached_prefix: tuple[int, ...] = ()) -> np.ndarray:
        """(sequences, vocab) log-probabilities of the token after each id sequence.

        Sequences that start with ``cached_prefix`` (BGPS' instruction and model prompt, the
        same for every beam) reuse its keys and values: only the beam's own tokens go through
        the model, which for a long instruction is most of the cost saved. Others (and every
        sequence when no prefix is given) run whole, right-padded.
        """
        import copy

        prefix = tuple(cached_prefix)
        rows = np.empty((len(sequences), len(self.tokenizer) if not hasattr(self.model.config, "vocab_size")
                         else self.model.config.vocab_size), dtype=np.float64)
        shared = [i for i, s in enumerate(sequences) if prefix and tuple(s[:len(prefix)]) == prefix]
        whole = sorted(set(range(len(sequences))) - set(shared))
        for start in range(0, len(whole), self.batch_size):
            batch = whole[start:start + self.batch_size]
            logits, _, attention_mask = self._logits([list(sequences[i]) for i in batch])
            last = attention_mask.sum(-1) - 1
            final = logits[torch.arange(len(batch), device=logits.device), last]
            rows[batch] = torch.log_softmax(final, dim=-1).cpu().numpy()
        if not shared:
            return rows
        past, prefix_logits = self._prefix_state(prefix)
        bare = [i for i in shared if len(sequences[i]) == len(prefix)]
        if bare:
            rows[bare] = torch.log_softmax(prefix_logits, dim=-1).cpu().numpy()
        rest = [i for i in shared if len(sequences[i]) > len(prefix)]
        for start in range(0, len(rest), self.batch_size):
            batch = rest[start:start + self.batch_size]
            input_ids, mask = self._right_padded([list(sequences[i][len(prefix):]) for i in batch])
            cache = copy.deepcopy(past)  # the forward pass appends to it in place
            cache.batch_repeat_interleave(len(batch))
            attention_mask = torch.cat([torch.ones((len(batch), len(prefix)), dtype=mask.dtype,
                                                   device=mask.device), mask], dim=1)
            positions = torch.arange(len(prefix), len(prefix) + input_ids.shape[1],
                                     device=input_ids.device).expand(len(batch), -1)
            logits = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions,
                                use_cache=True, **{_cache_argument(self.model): cache}).logits.float()
            last = mask.sum(-1) - 1
            final = logits[torch.arange(len(batch), device=logits.device), last]
            rows[batch] = torch.log_softmax(final, dim=-1).cpu().numpy()
        return rows

    @torch.no_grad()
    def complete(self, prompt: str, max_new_tokens: int = 32) -> str:
        """Greedy continuation of ``prompt`` (the new text only), stopping at EOS."""
        ids = self.encode_prefix(prompt, verbose=False)
        max_new_tokens = self._within_context(len(ids), max_new_tokens)
        input_ids, attention_mask = self._right_padded([ids])
        output = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            do_sample=False,
            num_beams=1,
            max_new_tokens=max_new_tokens,
            pad_token_id=self.pad_token_id,
            eos_token_id=self.tokenizer.eos_token_id,
        )
        text: str = self.tokenizer.decode(output[0, input_ids.shape[1]:], skip_special_tokens=True)
        return text.strip()

    @property
    def has_chat_template(self) -> bool:
        """Whether the tokenizer frames a user turn (an instruction-tuned model's format)."""
        return bool(getattr(self.tokenizer, "chat_template", None))

    def instruction_ids(self, instruction: str) -> list[int]:
        """``instruction`` as the model reads it: a user turn of the chat template with the
        assistant's turn opened, or the raw text when the tokenizer has no template."""
        if self.has_chat_template:
            return list(self.tokenizer.apply_chat_template(
                [{"role": "user", "content": instruction}], tokenize=True, add_generation_prompt=True,
                return_dict=False))
        return self.encode_prefix(instruction, verbose=False)

    def count_instruction_tokens(self, instruction: str) -> int:
        """Tokens ``instruction`` takes as :meth:`reply` frames it (room left for the answer)."""
        return len(self.instruction_ids(instruction))

    @torch.no_grad()
    def reply(self, instruction: str, max_new_tokens: int) -> Reply:
        """Greedy answer to ``instruction`` as a user turn of the tokenizer's chat template
        (an instruction-tuned model answers its own format), raw text when it has none;
        ``cut``: the budget ran out before EOS, so the answer is incomplete."""
        ids = self.instruction_ids(instruction)
        max_new_tokens = self._within_context(len(ids), max_new_tokens)
        input_ids, attention_mask = self._right_padded([ids])
        output = self.model.generate(
            input_ids=input_ids, attention_mask=attention_mask, do_sample=False, num_beams=1,
            max_new_tokens=max_new_tokens, pad_token_id=self.pad_token_id,
            eos_token_id=self.tokenizer.eos_token_id,
        )
        new = output[0, input_ids.shape[1]:].tolist()
        ended = self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id in new
        text = self.tokenizer.decode(new, skip_special_tokens=True).strip()
        return Reply(text, cut=not ended and len(new) >= max_new_tokens, new_tokens=len(new))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.model).__name__})"


def _cache_argument(model: Any) -> str:
    """The forward argument that takes a KV cache: ``cache`` (transformers >= 5.2x) or
    ``past_key_values`` (before)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(output: Any) -> Any:
    """A forward output's KV cache, under either name."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values
