"""Bias-Guided Prompt Search (seeds/001): the search, an LLM's beam search steered by a linear
probe on the generator's h-space (Eq. 4, App. A), its settings and its result; the
package's ``gate`` measures what it found."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

import numpy as np

NAMES_OF = {
    "gender": ("man", "men", "woman", "women", "boy", "girl", "he", "she", "his", "her", "him",
               "gentleman", "lady", "masculine", "feminine", "guy", "mr", "mrs", "ms"),
    "age": ("elderly", "aged", "senior", "retired", "teenage", "teenager", "child", "kid", "youth", "boy", "girl"),
}
"""Common words that name an axis beyond its values: add them to ``forbidden_names``."""


class TokenLanguageModel(Protocol):
    """What the search needs from an LLM: token ids in, next-token log-probabilities out."""

    eos_token_id: int

    def encode_prefix(self, model_prompt: str) -> list[int]:
        """Ids of the (instructed) context ending with the model prompt."""
        ...

    def next_token_logprobs(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """(sequences, vocab) natural-log probabilities of the next token."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of a continuation's ids."""
        ...


class ProbeScorer(Protocol):
    """p_clf(target | h_t(x, z_k)) for each prompt x and latent k: ``per_latent(prompts)`` gives
    (prompts, K). A scorer without ``per_latent`` gives one probability per prompt when
    called, taken as K = 1 (both probe terms then agree).

    Optional ``unet_forwards`` (an int that grows) lets the result report the search's cost.
    """

    def __call__(self, prompts: Sequence[str]) -> np.ndarray:
        ...


PROBE_TERMS = ("mean_log", "log_mean")
"""How the K latents' probabilities enter the score: the appendix's mean of log probabilities,
or Eq. 4's log of the mean probability."""

SMALLEST_PROBABILITY = 1e-30
"""Floor under a probe probability before its log: a probe's float32 softmax can round a
probability to 0, and one latent at log 0 = −inf would decide the mean of logs alone."""


def probe_term(per_latent: np.ndarray, how: str = "mean_log") -> np.ndarray:
    """The term λ multiplies, for each prompt, from its (prompts, K) probe probabilities:
    ``mean_log`` (1/K) Σ_k log p_k (App. A) or ``log_mean`` log (1/K) Σ_k p_k (Eq. 4)."""
    p = np.clip(np.asarray(per_latent, dtype=np.float64), SMALLEST_PROBABILITY, 1.0)
    if p.ndim == 1:
        p = p[:, None]
    if how == "mean_log":
        return np.log(p).mean(axis=1)
    if how == "log_mean":
        return np.log(p.mean(axis=1))
    raise ValueError(f"probe_term must be one of {', '.join(PROBE_TERMS)}, got {how!r}")


def per_latent_probabilities(scorer: ProbeScorer, prompts: Sequence[str]) -> np.ndarray:
    """(prompts, K) probabilities from ``scorer.per_latent``, or (prompts, 1) from a scorer
    that gives one per prompt."""
    if hasattr(scorer, "per_latent"):
        return np.atleast_2d(np.asarray(scorer.per_latent(list(prompts)), dtype=np.float64))
    return np.asarray(scorer(list(prompts)), dtype=np.float64).reshape(len(prompts), 1)


@dataclass(frozen=True, kw_only=True)
class SearchSettings:
    """Everything that decides which prompts a search finds (with the LM, probe and seed).

    The settings a check chooses have no default here: the kind's ``Params`` hold the one
    default each (``kinds.no_bgps_prompt_exceeds.search_settings``), and a caller outside a
    suite names them. Those with a default are the search's own, no check's to choose."""

    target: str
    model_prompt: str
    lam: float
    """λ in Eq. 4 (the paper uses 10 and 100; 0 is the LLM alone)."""
    beam_size: int
    expansion: int
    sampling_factor: int = 3
    """F: each beam's top E·F tokens are sampled down to E."""
    temperature: float = 1.0
    sample_first_token: bool = True
    max_new_tokens: int
    min_new_tokens: int = 1
    prompts: int
    """Searches to run, one prompt each (duplicates merged)."""
    seed: int
    forbidden_names: tuple[str, ...] = ()
    probe_term: str
    """``mean_log`` (App. A: mean over latents of log p_clf) or ``log_mean`` (Eq. 4 as printed)."""
    complete_above: float | None
    """Before a candidate is scored, append the tokens the LLM is this sure of (p ≥ it), so the
    probe reads "in a sunlit garden" rather than the uninformative "in a"; None: score every
    prefix as it stands (the paper). A departure from the paper: see ``_Search.complete``."""

    def __post_init__(self) -> None:
        if self.probe_term not in PROBE_TERMS:
            raise ValueError(f"probe_term must be one of {', '.join(PROBE_TERMS)}, got {self.probe_term!r}")
        if self.complete_above is not None and not 0.5 < self.complete_above <= 1.0:
            raise ValueError(f"complete_above must be in (0.5, 1] or None, got {self.complete_above!r}")


PAPER_SEARCH = {"beam_size": 10, "expansion": 10, "prompts": 100, "probe_step": 0.5}
"""The paper's search (§4, App. B): beam 10, expansion 10, 100 prompts a target, h_t read at
mid-schedule (its code: step 25 of 50 DDIM steps; ``probe_step`` is that fraction)."""


PAPER_MAX_NEW_TOKENS = 24
"""The paper protocol's longest continuation. The paper's found prompts run 12 to 22 words
(Fig. 2, §4.3) after the 8-word model prompt, so up to 14 new words, about 20 tokens of
Mistral's tokenizer; A.3's own figure is not legible in seeds/001, so this is the length the
published prompts need, not a quoted setting. Measured with App. C's instruction and a random
Llama (benchmarks/bgps_prompt_length.txt): 10 tokens found prompts of 10 to 11 words, 24 of
12 to 18, for 2.84x the candidates scored (each K UNet forwards) and 5.4x the LLM's time."""


def departures_from_paper(settings: SearchSettings, step_index: int | None = None,
                          schedule_steps: int | None = None) -> list[str]:
    """Where a search's settings differ from ``PAPER_SEARCH``, each as "ours (paper: theirs)"."""
    ours = {"beam_size": settings.beam_size, "expansion": settings.expansion, "prompts": settings.prompts}
    names = {"beam_size": "beam", "expansion": "expansion", "prompts": "prompts"}
    out = [f"{names[k]} {v} (paper: {PAPER_SEARCH[k]})" for k, v in ours.items() if v != PAPER_SEARCH[k]]
    if settings.max_new_tokens < PAPER_MAX_NEW_TOKENS:
        out.append(f"max_new_tokens {settings.max_new_tokens} (the paper's prompts run 12 to 22 "
                   f"words; {PAPER_MAX_NEW_TOKENS} reaches them)")
    if step_index is not None and schedule_steps:
        fraction = step_index / schedule_steps
        if abs(fraction - PAPER_SEARCH["probe_step"]) > 1e-9:
            out.append(f"probe step {step_index} of {schedule_steps} "
                       f"({'earlier' if fraction < PAPER_SEARCH['probe_step'] else 'later'} than the "
                       f"paper's mid-schedule, 25 of 50)")
    return out


def measurement_seed(image_seed: int, search_seed: int) -> int:
    """The image seed a search's found prompts are measured with: the suite's own for search
    seed 0 (images shared with every other check of the prompt), else one derived from both,
    so that two searches that find the same prompt measure it on independent images."""
    if search_seed == 0:
        return int(image_seed)
    return int(np.random.SeedSequence([int(image_seed), int(search_seed), 0xB6B5]).generate_state(1)[0] >> 1)


@dataclass(frozen=True)
class FoundPrompt:
    """One prompt and the terms of its Eq. 4 score."""

    prompt: str
    continuation: str
    score: float
    lm_log_likelihood: float
    """log p_LLM(continuation | context), EOS included when the beam finished."""
    probe_probability: float
    """(1/K) Σ_k p_clf(target | h_t(x, z_k)); NaN when no probe scored it."""
    tokens: int
    finished: bool
    runs: tuple[int, ...]
    probe_term: float = math.nan
    """The term λ multiplies (``SearchSettings.probe_term``); NaN when no probe scored it."""


@dataclass(frozen=True)
class SearchProgress:
    """Reported after every beam step."""

    run: int
    runs: int
    step: int
    best_score: float
    best_prompt: str
    live: int
    finished: int
    prompts_found: int


@dataclass(frozen=True)
class BGPSResult:
    """Found prompts, best first, with the settings and what the search cost."""

    prompts: tuple[FoundPrompt, ...]
    settings: SearchSettings
    candidates_scored: int
    """Distinct candidate texts the probe scored (each costs K UNet forwards)."""
    dropped_naming: int
    """Candidates dropped because they name the attribute."""
    unet_forwards: int | None
    """UNet evaluations the probe spent (latents x candidates + neutral denoising), if it says."""
    wall_s: float

    @property
    def texts(self) -> list[str]:
        return [p.prompt for p in self.prompts]

    @property
    def lam(self) -> float:
        return self.settings.lam

    def to_dict(self) -> dict:
        return {
            "prompts": [asdict(p) for p in self.prompts],
            "settings": asdict(self.settings),
            "candidates_scored": self.candidates_scored,
            "dropped_naming": self.dropped_naming,
            "unet_forwards": self.unet_forwards,
            "wall_s": self.wall_s,
        }

    @classmethod
    def from_dict(cls, record: dict) -> BGPSResult:
        """The result ``to_dict`` wrote (a lock file's entry)."""
        settings = settings_as_searched(record["settings"])
        settings["forbidden_names"] = tuple(settings.get("forbidden_names", ()))
        return cls(prompts=found_prompts_from_dicts(record["prompts"]), settings=SearchSettings(**settings),
                   candidates_scored=int(record.get("candidates_scored", 0)),
                   dropped_naming=int(record.get("dropped_naming", 0)),
                   unet_forwards=record.get("unet_forwards"), wall_s=float(record.get("wall_s", 0.0)))


GLUED_NAME_LENGTH = 5
"""A name this long or longer names the attribute inside a word too: a byte-level LM glues
words ("a doctor inmiddle-aged nurse", found for middle-aged and drawn 0.88 middle-aged by
toy-sd, issue #37). Shorter names match whole words, or the last part of a hyphenated compound
("ifto-aged", found next, drawn 0.78 middle-aged), never inside a word ("male" in "female")."""


def names_attribute(text: str, names: Collection[str]) -> bool:
    """Whether ``text`` contains any of ``names`` as a whole word or phrase, or one of
    ``GLUED_NAME_LENGTH`` letters or more inside a word (case-insensitive)."""
    return _names_pattern(tuple(names)).search(text) is not None if names else False


def _names_pattern(names: tuple[str, ...]) -> re.Pattern:
    stripped = sorted({n.strip() for n in names if n.strip()}, key=len, reverse=True)
    alternatives = "|".join(re.escape(n) for n in stripped)
    glued = "|".join(re.escape(n) for n in stripped if len(n) >= GLUED_NAME_LENGTH)
    # Whole words; the last part of a hyphenated compound ("ifto-aged" names age, "aged-care"
    # does not); long names inside a word.
    pattern = (rf"(?<![\w-])(?:{alternatives})(?![\w-])|(?<=\w-)(?:{alternatives})(?![\w-])"
               + (f"|(?:{glued})" if glued else ""))
    return re.compile(pattern, re.IGNORECASE)


def join_prompt(model_prompt: str, continuation: str) -> str:
    """The model prompt followed by its continuation, one space between words."""
    if not continuation or continuation[0].isspace() or continuation[0] in ",.;:!?'":
        return (model_prompt + continuation).strip()
    return f"{model_prompt} {continuation}".strip()


@dataclass
class _Beam:
    tokens: tuple[int, ...]
    lm_log_likelihood: float
    score: float = 0.0
    probability: float = math.nan
    term: float = math.nan
    text: str = ""
    finished: bool = False


def _gumbel_top_k(logits: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k distinct indices drawn without replacement with probabilities softmax(logits)."""
    keys = logits + rng.gumbel(size=logits.shape)
    order = np.argsort(-keys, kind="stable")
    return order[:min(k, int(np.isfinite(logits).sum()))]


class _Search:
    """One BGPS search state (shared probe memo across runs)."""

    def __init__(self, lm: TokenLanguageModel, scorer: ProbeScorer | None, settings: SearchSettings,
                 progress: Callable[[SearchProgress], None] | None) -> None:
        self.lm, self.scorer, self.settings, self.progress = lm, scorer, settings, progress
        self.forbidden = _names_pattern(tuple(settings.forbidden_names)) if settings.forbidden_names else None
        self.context = list(lm.encode_prefix(settings.model_prompt))
        self.banned = list(getattr(lm, "banned_token_ids", ()))
        self.memo: dict[str, tuple[float, float]] = {}
        self.dropped = 0

    def probe(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """For each text the mean probe probability and the probe term, each distinct text
        scored once."""
        new = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if new:
            if self.scorer is None:  # callers probe only with a scorer (score, bgps_search)
                raise ValueError("the probe term needs a probe scorer")
            per_latent = per_latent_probabilities(self.scorer, new)
            terms = probe_term(per_latent, self.settings.probe_term)
            for text, p, term in zip(new, per_latent.mean(axis=1), terms):
                self.memo[text] = (float(p), float(term))
        pairs = np.array([self.memo[t] for t in texts], dtype=np.float64).reshape(len(texts), 2)
        return pairs[:, 0], pairs[:, 1]

    def score(self, beams: list[_Beam]) -> None:
        """(texts already set) log p_LLM(x) + λ · the probe term (mean of logs, or Eq. 4's
        log of the mean)."""
        lam = self.settings.lam
        if lam == 0 or self.scorer is None:
            for beam in beams:
                beam.score = beam.lm_log_likelihood
            return
        probabilities, terms = self.probe([b.text for b in beams])
        for beam, p, term in zip(beams, probabilities, terms):
            beam.probability, beam.term = float(p), float(term)
            beam.score = beam.lm_log_likelihood + lam * float(term)

    def expand(self, live: list[_Beam], step: int, rng: np.random.Generator) -> list[_Beam]:
        """Candidates: the first token sampled from the full distribution, later E per beam
        sampled with temperature from its top E·F tokens (§3.3, "Prompt Variability")."""
        s = self.settings
        logprobs = self.lm.next_token_logprobs([self.context + list(b.tokens) for b in live])
        logprobs[:, self.banned] = -np.inf
        if step < s.min_new_tokens and self.lm.eos_token_id is not None:
            logprobs[:, self.lm.eos_token_id] = -np.inf
        candidates = []
        for beam, row in zip(live, logprobs):
            if step == 0 and s.sample_first_token:
                chosen = _gumbel_top_k(row, 1, rng)
            else:
                top = np.argsort(-row, kind="stable")[:s.expansion * s.sampling_factor]
                top = top[np.isfinite(row[top])]
                chosen = top[_gumbel_top_k(row[top] / s.temperature, s.expansion, rng)]
            for token in chosen:
                token = int(token)
                finished = token == self.lm.eos_token_id
                tokens = beam.tokens if finished else beam.tokens + (token,)
                candidates.append(_Beam(tokens, beam.lm_log_likelihood + float(row[token]), finished=finished))
        return self.complete(candidates)

    def complete(self, candidates: list[_Beam]) -> list[_Beam]:
        """Extend each live candidate with the tokens the LLM is near-certain of (p ≥
        ``complete_above``), EOS included, up to ``max_new_tokens``.

        Why: the probe scores prefixes, and a phrase whose first words carry no signal ("in
        a" before "sunlit garden") costs LM likelihood with no probe gain, so beam search
        prunes it one step before the word that would have lifted it. The LLM would append
        the near-certain tokens anyway on the next step (their log p is ~0, the score's LM
        term barely moves); scoring them now lets the probe see the phrase. The found
        prompt's LM log-likelihood includes them, so the score stays Eq. 4 of that prompt.
        """
        s = self.settings
        if s.complete_above is None:
            return candidates
        threshold = math.log(s.complete_above)
        live = [c for c in candidates if not c.finished and len(c.tokens) < s.max_new_tokens]
        while live:
            logprobs = self.lm.next_token_logprobs([self.context + list(c.tokens) for c in live])
            logprobs[:, self.banned] = -np.inf
            extended = []
            for candidate, row in zip(live, logprobs):
                if len(candidate.tokens) < s.min_new_tokens and self.lm.eos_token_id is not None:
                    row[self.lm.eos_token_id] = -np.inf
                token = int(np.argmax(row))
                if row[token] < threshold:
                    continue
                candidate.lm_log_likelihood += float(row[token])
                if token == self.lm.eos_token_id:
                    candidate.finished = True
                else:
                    candidate.tokens += (token,)
                    if len(candidate.tokens) < s.max_new_tokens:
                        extended.append(candidate)
            live = extended
        return candidates

    def run(self, run: int, found: int) -> _Beam | None:
        s = self.settings
        rng = np.random.default_rng([s.seed, run])
        live, finished = [_Beam((), 0.0)], []
        for step in range(s.max_new_tokens):
            candidates = self.expand(live, step, rng)
            for c in candidates:
                c.text = join_prompt(s.model_prompt, self.lm.decode(c.tokens))
            kept = [c for c in candidates if not (self.forbidden and self.forbidden.search(c.text))]
            self.dropped += len(candidates) - len(kept)
            self.score(kept)
            # Score B·E continuations, keep the top B; those ending in EOS are finished.
            # Completion lets two parents of different lengths reach the same tokens: keep one.
            kept.sort(key=lambda b: -b.score)
            best_first: dict[tuple, _Beam] = {}
            for beam in kept:
                best_first.setdefault((beam.tokens, beam.finished), beam)
            kept = list(best_first.values())
            top = kept[:s.beam_size]
            # Finished: ended in EOS, or (grown by ``complete``) already at max_new_tokens.
            finished += [b for b in top if b.finished or len(b.tokens) >= s.max_new_tokens]
            live = [b for b in top if not b.finished and len(b.tokens) < s.max_new_tokens]
            if self.progress is not None:
                pool = finished + live
                best = max(pool, key=lambda b: b.score) if pool else None
                self.progress(SearchProgress(run, s.prompts, step, best.score if best else -math.inf,
                                             best.text if best else "", len(live), len(finished), found))
            if not live:
                break
        pool = [b for b in finished + live if b.tokens]
        return max(pool, key=lambda b: b.score) if pool else None


def bgps_search(
    lm: TokenLanguageModel,
    scorer: ProbeScorer | None,
    settings: SearchSettings,
    *,
    progress: Callable[[SearchProgress], None] | None = None,
) -> BGPSResult:
    """Run ``settings.prompts`` BGPS searches; return the distinct prompts found, best first.

    With ``settings.lam == 0`` the probe takes no part in the search (the LLM-alone baseline);
    if a scorer is given it still scores the found prompts, for comparison.
    """
    started = time.perf_counter()
    forwards_before = getattr(scorer, "unet_forwards", None)
    search = _Search(lm, scorer, settings, progress)
    best: dict[str, FoundPrompt] = {}
    for run in range(settings.prompts):
        beam = search.run(run, len(best))
        if beam is None:
            continue
        previous = best.get(beam.text)
        runs = (previous.runs if previous else ()) + (run,)
        best[beam.text] = FoundPrompt(
            prompt=beam.text,
            continuation=lm.decode(beam.tokens).strip(),
            score=beam.score,
            lm_log_likelihood=beam.lm_log_likelihood,
            probe_probability=beam.probability,
            tokens=len(beam.tokens),
            finished=beam.finished,
            runs=runs,
            probe_term=beam.term,
        )
    found = sorted(best.values(), key=lambda p: -p.score)
    if scorer is not None and settings.lam == 0 and found:
        probabilities, terms = search.probe([p.prompt for p in found])
        found = [FoundPrompt(**{**asdict(p), "probe_probability": float(q), "probe_term": float(t)})
                 for p, q, t in zip(found, probabilities, terms)]
    forwards_after = getattr(scorer, "unet_forwards", None)
    return BGPSResult(
        prompts=tuple(found),
        settings=settings,
        candidates_scored=len(search.memo),
        dropped_naming=search.dropped,
        unet_forwards=None if forwards_before is None else int(forwards_after - forwards_before),
        wall_s=round(time.perf_counter() - started, 3),
    )


def llm_baseline(lm: TokenLanguageModel, settings: SearchSettings, scorer: ProbeScorer | None = None,
                 **kwargs) -> BGPSResult:
    """The same search with λ = 0 (the LLM alone; seeds/001 §4.1 "LLM" baseline)."""
    return bgps_search(lm, scorer, replace(settings, lam=0.0), **kwargs)


def lambda_sweep(lm: TokenLanguageModel, scorer: ProbeScorer | None, settings: SearchSettings,
                 lams: Sequence[float], **kwargs) -> dict[float, BGPSResult]:
    """The same searches (seeds, beams) at each λ: App. D's trade-off between naturalness (LM
    likelihood, perplexity) and bias; λ = 0 is the LLM alone. The probe's memo is not shared
    across λ, so each entry's cost is its own."""
    return {float(lam): bgps_search(lm, scorer, replace(settings, lam=float(lam)), **kwargs) for lam in lams}


def settings_as_searched(written: Mapping[str, Any]) -> dict[str, Any]:
    """A lock entry's ``settings`` as the search ran them: one written before ``probe_term``
    and ``complete_above`` existed searched with Eq. 4's log of the mean, every prefix scored
    as it stood (what ``BGPSResult.from_dict`` rebuilds and ``locks.bgps`` compares)."""
    return {"probe_term": "log_mean", "complete_above": None, **written}


def found_prompts_from_dicts(records: Sequence[dict]) -> tuple[FoundPrompt, ...]:
    """``FoundPrompt``s back from ``asdict`` records (a lock file's ``prompts``)."""
    return tuple(FoundPrompt(**{**r, "runs": tuple(r.get("runs", ()))}) for r in records)
