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

from .gate import (
    PAPER_PROMPT_WORDS,
    Attributes,
    BGPSEvaluation,
    BGPSGateResult,
    MeasuredPrompt,
    PromptShare,
    bgps_gate,
    evaluate_prompts,
    forbidden_names_for,
    mean_share_difference,
    mean_target_share,
    measure_prompts,
    prompt_words,
)
from .instructions import (
    INSTRUCTIONS,
    SCENARIO_MODEL_PROMPTS,
    SCENARIOS,
    UNREADABLE_PERPLEXITY,
    InstructionReading,
    instruction_for,
    paper_instruction,
    readable_instruction,
)
from .search import (
    NAMES_OF,
    PAPER_MAX_NEW_TOKENS,
    PAPER_SEARCH,
    PROBE_TERMS,
    SMALLEST_PROBABILITY,
    BGPSResult,
    FoundPrompt,
    ProbeScorer,
    SearchProgress,
    SearchSettings,
    TokenLanguageModel,
    bgps_search,
    departures_from_paper,
    found_prompts_from_dicts,
    join_prompt,
    lambda_sweep,
    llm_baseline,
    measurement_seed,
    names_attribute,
    per_latent_probabilities,
    probe_term,
    settings_as_searched,
)

__all__ = [
    "Attributes",
    "INSTRUCTIONS",
    "SCENARIOS",
    "SCENARIO_MODEL_PROMPTS",
    "BGPSEvaluation",
    "BGPSGateResult",
    "BGPSResult",
    "FoundPrompt",
    "InstructionReading",
    "MeasuredPrompt",
    "NAMES_OF",
    "PAPER_MAX_NEW_TOKENS",
    "PAPER_PROMPT_WORDS",
    "PAPER_SEARCH",
    "PROBE_TERMS",
    "ProbeScorer",
    "PromptShare",
    "SMALLEST_PROBABILITY",
    "SearchProgress",
    "SearchSettings",
    "TokenLanguageModel",
    "UNREADABLE_PERPLEXITY",
    "bgps_gate",
    "bgps_search",
    "departures_from_paper",
    "evaluate_prompts",
    "forbidden_names_for",
    "instruction_for",
    "found_prompts_from_dicts",
    "join_prompt",
    "lambda_sweep",
    "llm_baseline",
    "mean_share_difference",
    "mean_target_share",
    "measure_prompts",
    "measurement_seed",
    "names_attribute",
    "paper_instruction",
    "per_latent_probabilities",
    "probe_term",
    "prompt_words",
    "readable_instruction",
    "settings_as_searched",
]
