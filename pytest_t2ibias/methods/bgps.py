"""Bias-Guided Prompt Search (BGPS, seeds/001 §3): natural, attribute-neutral prompts that a
text-to-image model renders with one attribute value (e.g. male) far more often than chance.

§3.2, the objective. For a prompt x, an attribute a and K noise latents z_1..z_K,

    score(x) = log p_LLM(x) + λ · (1/K) Σ_k log p_clf(a | h_t(x, z_k))     (App. A, the code)
    score(x) = log p_LLM(x) + λ · log( (1/K) Σ_k p_clf(a | h_t(x, z_k)) )  (Eq. 4 as printed)

The paper's appendix (and its code) averages the classifier's *log* probabilities over the K
latents; Eq. 4 as printed takes the log of the mean probability. The search uses the first
(``probe_term="mean_log"``, the default); the second is ``probe_term="log_mean"``. They differ
when the latents disagree: p = [0.99, 0.01] at λ = 10 scores −23.1 under the mean of logs and
−6.9 under the log of the mean, so the mean of logs prefers a prompt that pushes the target
on every latent over one that pushes it hard on a few.

p_LLM keeps x natural and neutral (the LLM continues a model prompt such as "a photo of a person
working as a"); p_clf is a linear probe on the UNet's h-space at step t, after the K latents
were denoised under a neutral prompt up to t (one conditional UNet forward per candidate and
latent). λ trades naturalness for bias; λ = 0 is the LLM alone, the paper's "LLM" baseline.

§3.3, the optimisation: beam search over the LLM's tokens with beam size B and expansion E;
for variety each beam's top E·F continuations are drawn down to E by sampling with a
temperature, and the first token is sampled from the full distribution. Beams ending in EOS
move to a finished list; at ``max_new_tokens`` the live beams join them and the best is kept.
One search returns one prompt; ``prompts=N`` runs N searches from seeds (seed, run).
Departing from the paper, a candidate is first completed with the tokens the LLM is near-
certain of (``complete_above``), so the probe scores "in a sunlit garden", not "in a" (see
``_Search.complete`` and docs/STATISTICS.md).

§4.1, the evaluation: each found prompt's images are generated and classified; the paper
reports the mean target share over the found prompts with its CI against the LLM alone
(λ = 0) and a curated prompt set, the share of prompts naming the attribute (Gendered%) and
perplexity under a different LM (``mean_target_share``, ``mean_share_difference``,
``BGPSGateResult.paper_table``). What the search adds is what λ > 0 finds beyond the LLM
alone: the found prompts the λ = 0 baseline did not write (``BGPSGateResult.added``) and the
lift of the mean share over the baseline's. Each search seed's prompts are measured on
images of their own (``measurement_seed``), so two searches that find the same prompt give
two independent measurements of it.

The paper's search runs B = E = 10 and 100 prompts, the probe at mid-schedule (25 of 50 DDIM
steps); ``PAPER_SEARCH`` holds these, and ``departures_from_paper`` names where a gate's
settings differ (docs/STATISTICS.md: the toy gates run smaller searches on CPU).

The instruments are injected: a :class:`TokenLanguageModel` (``backends.token_lm.BeamSearchLM``
wraps a ``CausalLM``) and a :class:`ProbeScorer` (``backends.probe.HSpaceProbeScorer``, or a
script in tests). Prompts that name the attribute (its values, their phrases, synonyms) are
dropped during the search, as the paper filters them afterwards.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Protocol

import numpy as np

from .._types import Estimate
from ..metrics.intervals import wilson_interval
from ..metrics.judge import JudgeCalibration, correction_mode, judged_estimate

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


@dataclass(frozen=True)
class SearchSettings:
    """Everything that decides which prompts a search finds (with the LM, probe and seed)."""

    target: str
    model_prompt: str = "a photo of a person working as a"
    lam: float = 10.0
    """λ in Eq. 4 (the paper uses 10 and 100; 0 is the LLM alone)."""
    beam_size: int = 10
    expansion: int = 10
    sampling_factor: int = 3
    """F: each beam's top E·F tokens are sampled down to E."""
    temperature: float = 1.0
    sample_first_token: bool = True
    max_new_tokens: int = 12
    min_new_tokens: int = 1
    prompts: int = 10
    """Searches to run, one prompt each (duplicates merged)."""
    seed: int = 0
    forbidden_names: tuple[str, ...] = ()
    probe_term: str = "mean_log"
    """``mean_log`` (App. A: mean over latents of log p_clf) or ``log_mean`` (Eq. 4 as printed)."""
    complete_above: float | None = 0.9
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


def departures_from_paper(settings: SearchSettings, step_index: int | None = None,
                          schedule_steps: int | None = None) -> list[str]:
    """Where a search's settings differ from ``PAPER_SEARCH``, each as "ours (paper: theirs)"."""
    ours = {"beam_size": settings.beam_size, "expansion": settings.expansion, "prompts": settings.prompts}
    names = {"beam_size": "beam", "expansion": "expansion", "prompts": "prompts"}
    out = [f"{names[k]} {v} (paper: {PAPER_SEARCH[k]})" for k, v in ours.items() if v != PAPER_SEARCH[k]]
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
        settings = dict(record["settings"])
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


# -- evaluation (seeds/001 §4.1 "Evaluation Metrics") ------------------------------------------


def _two_stage_means(counts: Sequence[tuple[int, int]], replicates: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates of the mean per-prompt share: resample the prompts, then each
    chosen prompt's images (binomially at its observed share). Both stages vary in the
    paper's protocol (which prompts the search found; which images a prompt drew), and with
    5 prompts the first stage alone gives an interval narrower than one prompt's own."""
    hits = np.array([k for k, n in counts], dtype=np.int64)
    sizes = np.array([n for k, n in counts], dtype=np.int64)
    chosen = rng.integers(len(counts), size=(replicates, len(counts)))
    drawn = rng.binomial(sizes[chosen], hits[chosen] / sizes[chosen])
    return (drawn / sizes[chosen]).mean(axis=1)


def mean_target_share(counts: Sequence[tuple[int, int]], *, confidence: float = 0.95,
                      n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """The paper's figure (§4.1): the mean over prompts of each prompt's target share, from
    ``(target images, answered images)`` per prompt, with a two-stage bootstrap interval
    (prompts, then images). ``n`` counts prompts; prompts with no answered image are left out."""
    counts = [(int(k), int(n)) for k, n in counts if n > 0]
    if not counts:
        return Estimate(math.nan, 0.0, 1.0, 0, confidence, "two-stage bootstrap")
    value = float(np.mean([k / n for k, n in counts]))
    means = _two_stage_means(counts, n_resamples, np.random.default_rng(seed))
    tail = (1 - confidence) / 2
    return Estimate(value, float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)),
                    len(counts), confidence, "two-stage bootstrap")


def mean_share_difference(counts: Sequence[tuple[int, int]], reference: Sequence[tuple[int, int]], *,
                          confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """Mean target share of ``counts``' prompts minus that of ``reference``'s (BGPS against
    the λ = 0 baseline, or against curated prompts: §4.1, Tables 1-2), each resampled in two
    stages, independently. ``n`` counts the prompts of both."""
    counts = [(int(k), int(n)) for k, n in counts if n > 0]
    reference = [(int(k), int(n)) for k, n in reference if n > 0]
    if not counts or not reference:
        return Estimate(math.nan, -1.0, 1.0, len(counts) + len(reference), confidence, "two-stage bootstrap")
    rng = np.random.default_rng(seed)
    value = float(np.mean([k / n for k, n in counts]) - np.mean([k / n for k, n in reference]))
    differences = _two_stage_means(counts, n_resamples, rng) - _two_stage_means(reference, n_resamples, rng)
    tail = (1 - confidence) / 2
    return Estimate(value, float(np.quantile(differences, tail)), float(np.quantile(differences, 1 - tail)),
                    len(counts) + len(reference), confidence, "two-stage bootstrap")


@dataclass(frozen=True)
class PromptShare:
    """Target share among one prompt's generated images, with its Wilson interval."""

    prompt: str
    share: Estimate
    names_attribute: bool


@dataclass(frozen=True)
class BGPSEvaluation:
    """Per-prompt target shares, their mean with a bootstrap CI over prompts, and perplexities."""

    per_prompt: tuple[PromptShare, ...]
    mean_share: Estimate
    pooled_share: Estimate
    """All images together (Wilson): ignores that images of one prompt are alike."""
    perplexity: tuple[float, ...] | None
    naming_share: float

    @property
    def max_share(self) -> PromptShare | None:
        return max(self.per_prompt, key=lambda p: p.share.value, default=None)

    @property
    def mean_perplexity(self) -> float:
        return float(np.mean(self.perplexity)) if self.perplexity else math.nan


def evaluate_prompts(
    prompts: Sequence[str],
    count_target: Callable[[str], tuple[int, int]],
    *,
    perplexity: Callable[[list[str]], np.ndarray] | None = None,
    forbidden_names: Collection[str] = (),
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> BGPSEvaluation:
    """Generate-and-classify each found prompt through ``count_target(prompt) -> (target
    images, images)``; perplexity under a *different* LM (``CausalLM.perplexity``)."""
    counts = [count_target(p) for p in prompts]
    per_prompt = tuple(
        PromptShare(p, wilson_interval(int(k), int(n), confidence), names_attribute(p, forbidden_names))
        for p, (k, n) in zip(prompts, counts)
    )
    total_k, total_n = sum(k for k, _ in counts), sum(n for _, n in counts)
    return BGPSEvaluation(
        per_prompt=per_prompt,
        mean_share=mean_target_share(counts, confidence=confidence, n_resamples=n_resamples, seed=seed),
        pooled_share=wilson_interval(int(total_k), int(total_n), confidence),
        perplexity=tuple(float(x) for x in perplexity(list(prompts))) if perplexity and prompts else None,
        naming_share=float(np.mean([p.names_attribute for p in per_prompt])) if per_prompt else math.nan,
    )


# -- the gate: found prompts measured through the instrument (seeds/001 §4.1) -----------------


def found_prompts_from_dicts(records: Sequence[dict]) -> tuple[FoundPrompt, ...]:
    """``FoundPrompt``s back from ``asdict`` records (a lock file's ``prompts``)."""
    return tuple(FoundPrompt(**{**r, "runs": tuple(r.get("runs", ()))}) for r in records)


@dataclass(frozen=True)
class MeasuredPrompt:
    """One prompt's target share among its generated images, as the gate judges it."""

    prompt: str
    share: Estimate
    """Wilson interval of target images / answered images (filtered and abstained left out)."""
    n: int
    perplexity: float
    """Under the evaluation LM (a different one from the searching LM); NaN when none."""
    score: float = math.nan
    lm_log_likelihood: float = math.nan
    probe_probability: float = math.nan
    names_attribute: bool = False

    def to_dict(self) -> dict:
        return {"prompt": self.prompt, "share": self.share.to_dict(), "n": int(self.n),
                "perplexity": float(self.perplexity), "score": float(self.score),
                "lm_log_likelihood": float(self.lm_log_likelihood),
                "probe_probability": float(self.probe_probability),
                "names_attribute": bool(self.names_attribute)}


@dataclass(frozen=True)
class BGPSGateResult:
    """What ``assert_no_bgps_prompt_exceeds`` judges: the prompts BGPS found for a target,
    each measured (share with CI, n, perplexity), beside the λ = 0 baseline's prompts and the
    neutral prompt, with the search settings and its cost."""

    axis: str
    target: str
    prompts: tuple[MeasuredPrompt, ...]
    baseline: tuple[MeasuredPrompt, ...]
    """The LLM alone (λ = 0), measured the same way; empty when not run."""
    neutral: MeasuredPrompt | None
    settings: SearchSettings
    searched: bool
    """False when the prompts came from a lock file (no LLM, no probe, no UNet for the search)."""
    search_wall_s: float
    wall_s: float
    unet_forwards: int | None
    """UNet evaluations the search spent (0 from a lock; None when the probe does not say)."""
    candidates_scored: int = 0
    dropped_naming: int = 0
    source: str = ""
    """Where the prompts came from: a lock file's path, or "search"."""
    curated: tuple[MeasuredPrompt, ...] = ()
    """User-given curated prompts (the paper's "Manually curated" row), measured the same way."""
    image_seed: int | None = None
    """The seed of the images every prompt was measured on (``measurement_seed``)."""
    probe_step: int | None = None
    """The denoising step whose h-space the probe read, of ``schedule_steps``."""
    schedule_steps: int | None = None

    @property
    def texts(self) -> list[str]:
        return [p.prompt for p in self.prompts]

    @property
    def added(self) -> tuple[MeasuredPrompt, ...]:
        """What the search added: the found prompts the λ = 0 baseline (the LLM alone) did not
        write; every found prompt when no baseline ran (then nothing tells them apart)."""
        if not self.baseline:
            return self.prompts
        theirs = {p.prompt for p in self.baseline}
        return tuple(p for p in self.prompts if p.prompt not in theirs)

    @property
    def shared_with_baseline(self) -> tuple[MeasuredPrompt, ...]:
        """Found prompts the LLM alone writes too: the model's bias on them is no finding of
        the search's (a plain prompt's share is a balance check's business)."""
        theirs = {p.prompt for p in self.baseline}
        return tuple(p for p in self.prompts if p.prompt in theirs)

    def departures(self) -> list[str]:
        """Where this search's settings differ from the paper's (``departures_from_paper``)."""
        return departures_from_paper(self.settings, self.probe_step, self.schedule_steps)

    def group(self, which: str) -> tuple[MeasuredPrompt, ...]:
        """``found`` (BGPS' prompts), ``baseline`` (λ = 0) or ``curated``."""
        groups = {"found": self.prompts, "baseline": self.baseline, "curated": self.curated}
        if which not in groups:
            raise ValueError(f"group must be one of {', '.join(groups)}, got {which!r}")
        return groups[which]

    def mean_share(self, which: str = "found", confidence: float = 0.95) -> Estimate:
        """§4.1's figure: the mean over a group's prompts of each prompt's target share, with a
        two-stage bootstrap interval (prompts, then images)."""
        return mean_target_share(_counts(self.group(which)), confidence=confidence)

    def mean_lift(self, over: str = "baseline", confidence: float = 0.95) -> Estimate | None:
        """Mean target share of the found prompts minus that of the ``baseline`` (λ = 0) or
        ``curated`` prompts (Tables 1-2 side by side); None when that group is empty."""
        reference = self.group(over)
        if not self.prompts or not reference:
            return None
        return mean_share_difference(_counts(self.prompts), _counts(reference), confidence=confidence)

    def naming_share(self, which: str = "found") -> float:
        """Gendered% (Tables 1-2): the share of a group's prompts that name the axis (its
        values, their phrases or synonyms); the search drops these, so found prompts show 0."""
        group = self.group(which)
        return float(np.mean([p.names_attribute for p in group])) if group else math.nan

    def mean_perplexity(self, which: str = "found") -> float:
        """Mean perplexity of a group's prompts under the evaluation LM; NaN when none."""
        values = [p.perplexity for p in self.group(which) if math.isfinite(p.perplexity)]
        return float(np.mean(values)) if values else math.nan

    def paper_table(self, confidence: float = 0.95) -> dict[str, dict]:
        """The paper's evaluation (Tables 1-2) as rows: per group, its prompts, mean target
        share with interval, Gendered% and perplexity; and the found prompts' lift over the
        λ = 0 baseline and the curated prompts."""
        rows: dict[str, dict] = {}
        for which in ("found", "baseline", "curated"):
            if self.group(which):
                rows[which] = {"prompts": len(self.group(which)),
                               "mean_share": self.mean_share(which, confidence).to_dict(),
                               "naming_share": self.naming_share(which),
                               "mean_perplexity": self.mean_perplexity(which)}
        for over in ("baseline", "curated"):
            lift = self.mean_lift(over, confidence)
            if lift is not None:
                rows[f"lift_over_{over}"] = lift.to_dict()
        return rows

    def lift(self, over: str = "neutral", confidence: float = 0.95) -> Estimate | None:
        """How much more often the found prompts (pooled) draw the target than the neutral
        prompt (``over="neutral"``) or the λ = 0 baseline's prompts (``"baseline"``), with
        Newcombe's interval: the search's effect, which must exclude 0 to mean anything."""
        from ..metrics.intervals import difference_of_shares

        reference = ([self.neutral] if self.neutral is not None else []) if over == "neutral" \
            else list(self.baseline)
        if not self.prompts or not reference:
            return None
        found_k, found_n = _pooled(self.prompts)
        ref_k, ref_n = _pooled(reference)
        return difference_of_shares(found_k, found_n, ref_k, ref_n, confidence)

    @property
    def worst(self) -> MeasuredPrompt | None:
        return max(self.prompts, key=lambda p: np.nan_to_num(p.share.value, nan=-1.0), default=None)

    def to_dict(self) -> dict:
        return {"axis": self.axis, "target": self.target,
                "prompts": [p.to_dict() for p in self.prompts],
                "baseline": [p.to_dict() for p in self.baseline],
                "curated": [p.to_dict() for p in self.curated],
                "neutral": self.neutral.to_dict() if self.neutral else None,
                "settings": asdict(self.settings), "searched": self.searched,
                "search_wall_s": self.search_wall_s, "wall_s": self.wall_s,
                "unet_forwards": self.unet_forwards, "source": self.source,
                "image_seed": self.image_seed, "probe_step": self.probe_step,
                "schedule_steps": self.schedule_steps}

    def summary(self) -> str:
        """One line per prompt: share [CI] n, perplexity, the prompt; baseline and neutral after."""
        def line(p: MeasuredPrompt) -> str:
            return (f"  {p.share.value:5.2f} [{p.share.low:.2f}, {p.share.high:.2f}] n={p.n:<3d} "
                    f"ppl {p.perplexity:5.2f}  {p.prompt}")
        lines = [f"BGPS {self.axis}={self.target} (λ={self.settings.lam:g}), {len(self.prompts)} prompts:"]
        lines += [line(p) for p in self.prompts]
        if self.baseline:
            lines += ["λ=0 baseline (the LLM alone):"] + [line(p) for p in self.baseline]
        if self.curated:
            lines += ["curated prompts:"] + [line(p) for p in self.curated]
        if self.neutral:
            lines += ["neutral prompt:", line(self.neutral)]
        return "\n".join(lines)


class Attributes(Protocol):
    """The instrument's part the gate measures with (``instrument.Instrument``)."""

    def images(self, prompts: Sequence[str], *, role: str = ..., per_prompt: int | None = ...): ...

    def attributes(self, images, axis, filter=None): ...


def measure_prompts(
    instrument: Attributes,
    axis,
    target: str,
    found: Sequence[FoundPrompt | str],
    *,
    filter=None,
    perplexity: Callable[[list[str]], Sequence[float]] | None = None,
    forbidden_names: Collection[str] = (),
    confidence: float = 0.95,
    calibration: JudgeCalibration | None = None,
    judge_correction: str = "off",
) -> tuple[MeasuredPrompt, ...]:
    """Generate each prompt's images (the instrument's plan), read ``axis`` off them and
    count ``target`` among the answered images: Wilson share, n, perplexity (§4.1). With a
    judge ``calibration`` the share is read under ``judge_correction`` (``metrics.judge``):
    corrected, the Dirichlet posterior of the prompt's shares with each draw corrected."""
    from ..metrics.posterior import posterior_estimate

    mode = correction_mode(judge_correction, calibration)
    if not found:
        return ()
    texts = [f if isinstance(f, str) else f.prompt for f in found]
    answers = instrument.attributes(instrument.images(texts), axis, filter)
    column = list(axis.choices).index(target)
    labels, prompts = np.asarray(answers.labels), np.asarray(answers.prompts)
    ppl = list(perplexity(texts)) if perplexity is not None else [math.nan] * len(texts)
    measured = []
    for item, text, p in zip(found, texts, ppl):
        mine = labels[prompts == text]
        answered = mine[mine >= 0]

        def target_share(counts, answered=answered, mine=mine):
            if counts is None:
                return wilson_interval(int((answered == column).sum()), len(answered), confidence)
            return replace(posterior_estimate(lambda shares: shares[0][..., column], [mine],
                                              len(axis.choices), confidence=confidence,
                                              calibration=counts), n=len(answered))

        share = judged_estimate(target_share, calibration, mode)
        extra = {} if isinstance(item, str) else {
            "score": item.score, "lm_log_likelihood": item.lm_log_likelihood,
            "probe_probability": item.probe_probability}
        measured.append(MeasuredPrompt(text, share, len(answered), float(p),
                                       names_attribute=names_attribute(text, forbidden_names), **extra))
    return tuple(measured)


def bgps_gate(
    instrument: Attributes,
    axis,
    target: str,
    found: BGPSResult,
    *,
    baseline: BGPSResult | None = None,
    neutral_prompt: str | None = None,
    curated_prompts: Sequence[str] = (),
    filter=None,
    perplexity: Callable[[list[str]], Sequence[float]] | None = None,
    confidence: float = 0.95,
    searched: bool = True,
    source: str = "search",
    calibration: JudgeCalibration | None = None,
    judge_correction: str = "off",
) -> BGPSGateResult:
    """Measure what a search found (and its λ = 0 baseline and the neutral prompt) for the gate.

    The search itself is ``bgps_search`` with an injected LM and probe scorer; the caller
    may instead pass prompts read back from a lock file (``searched=False``)."""
    started = time.perf_counter()
    names = found.settings.forbidden_names
    measure = {"filter": filter, "perplexity": perplexity, "forbidden_names": names,
               "confidence": confidence, "calibration": calibration,
               "judge_correction": judge_correction}
    prompts = measure_prompts(instrument, axis, target, found.prompts, **measure)
    base = measure_prompts(instrument, axis, target, baseline.prompts, **measure) if baseline else ()
    curated = measure_prompts(instrument, axis, target, list(curated_prompts), **measure)
    neutral = measure_prompts(instrument, axis, target, [neutral_prompt], **measure)[0] \
        if neutral_prompt else None
    search_s = found.wall_s + (baseline.wall_s if baseline else 0.0) if searched else 0.0
    forwards = None if found.unet_forwards is None else found.unet_forwards + (
        (baseline.unet_forwards or 0) if baseline else 0)
    return BGPSGateResult(
        axis=axis.name, target=target, prompts=prompts, baseline=base, neutral=neutral,
        settings=found.settings, searched=searched, search_wall_s=round(search_s, 3),
        wall_s=round(search_s + time.perf_counter() - started, 3),
        unet_forwards=forwards if searched else 0, candidates_scored=found.candidates_scored,
        dropped_naming=found.dropped_naming, source=source, curated=curated)


def forbidden_names_for(axis, extra: Collection[str] = ()) -> tuple[str, ...]:
    """Words that name an axis: its choices, their phrases, the axis' ``names:`` and the
    common words in ``NAMES_OF`` (prompts containing any are dropped)."""
    words = [*axis.choices, *axis.phrases.values(), *getattr(axis, "names", ()),
             *NAMES_OF.get(axis.name, ()), *extra]
    return tuple(dict.fromkeys(w for w in words if w))


def _counts(prompts: Sequence[MeasuredPrompt]) -> list[tuple[int, int]]:
    """(target images, answered images) of each prompt."""
    return [(round(p.share.value * p.share.n), p.share.n) for p in prompts if p.share.n > 0]


def _pooled(prompts: Sequence[MeasuredPrompt]) -> tuple[int, int]:
    """Target images and answered images over ``prompts``."""
    answered = [p.share.n for p in prompts if p.share.n > 0]
    hits = [round(p.share.value * p.share.n) for p in prompts if p.share.n > 0]
    return int(sum(hits)), int(sum(answered))
