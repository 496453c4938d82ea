"""BGPS beam search (Eq. 4) on a scripted bigram LM and a scripted probe: known answers."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from support.bgps_world import ID, VOCAB, ScriptedLM, kind_settings

from pytest_t2ibias.methods.bgps import (
    bgps_search,
    evaluate_prompts,
    join_prompt,
    lambda_sweep,
    llm_baseline,
    names_attribute,
    probe_term,
)


class ScriptedProbe:
    """p(male): the planted trigger ("intense [focus]") 0.9, naming "male" 0.99, else 0.2."""

    def __init__(self, base=0.2):
        self.base = base
        self.unet_forwards = 0
        self.seen: list[str] = []

    def __call__(self, prompts):
        self.seen.extend(prompts)
        self.unet_forwards += 10 * len(prompts)  # as if K = 10 latents each
        return np.array([0.99 if names_attribute(p, ["male"]) else 0.9 if "intense" in p else self.base
                         for p in prompts])


PREFIX = "a photo of a person working as a"




GREEDY = replace(kind_settings(beam=3, expansion=3, max_new_tokens=6, prompts=1), sampling_factor=1,
                 sample_first_token=False, forbidden_names=("male", "female"))


def lm_log_likelihood(words):
    lm = ScriptedLM()
    ids = [ID["<bos>"]] + [ID[w] for w in words]
    return sum(lm.next_token_logprobs([ids[:i]])[0, ids[i]] for i in range(1, len(ids)))


def test_finds_the_known_best_prompt():
    probe = ScriptedProbe()
    result = bgps_search(ScriptedLM(), probe, GREEDY)
    best = result.prompts[0]
    assert best.prompt == f"{PREFIX} nurse with intense focus"
    assert best.finished and best.tokens == 4 and best.probe_probability == pytest.approx(0.9)
    expected_lm = lm_log_likelihood(["nurse", "with", "intense", "focus", "<eos>"])
    assert best.lm_log_likelihood == pytest.approx(expected_lm)
    assert best.score == pytest.approx(expected_lm + 10.0 * math.log(0.9))  # Eq. 4
    assert result.unet_forwards == 10 * result.candidates_scored
    assert result.candidates_scored == len(set(probe.seen)) == len(probe.seen)  # each text scored once


class LatentProbe:
    """Per-latent p(male) for K = 2 latents: "intense" pushes hard on one latent only
    ([0.99, 0.01], mean 0.5), "with a [garden]" steadily ([0.3, 0.3]), anything else [0.2, 0.2]."""

    unet_forwards = 0

    def per_latent(self, prompts):
        return np.array([[0.99, 0.01] if "intense" in p else [0.3, 0.3] if "with a" in p else [0.2, 0.2]
                         for p in prompts])

    def __call__(self, prompts):
        return self.per_latent(prompts).mean(axis=1)


def test_probe_term_is_the_mean_of_logs_by_default_and_the_log_of_the_mean_on_request():
    spiky, steady = [0.99, 0.01], [0.3, 0.3]
    # The numbers at λ = 10: −23.1 (mean of logs) against −6.9 (log of the mean).
    assert 10 * probe_term(np.array([spiky]))[0] == pytest.approx(-23.08, abs=0.01)
    assert 10 * probe_term(np.array([spiky]), "log_mean")[0] == pytest.approx(-6.93, abs=0.01)
    assert 10 * probe_term(np.array([steady]))[0] == pytest.approx(10 * math.log(0.3))
    # A probability rounded to 0 is floored, not -inf.
    assert math.isfinite(probe_term(np.array([[0.0, 1.0]]))[0])
    with pytest.raises(ValueError, match="probe_term"):
        probe_term(np.array([steady]), "median")
    with pytest.raises(ValueError, match="probe_term"):
        replace(GREEDY, probe_term="mean")


def test_mean_of_logs_reorders_beams_against_a_probe_that_is_sure_on_one_latent_only():
    """Same LM likelihood for "with intense focus" and "with a garden": the log of the mean
    prefers the spiky prompt (−6.9 > −12.0), the mean of logs the steady one (−12.0 > −23.1)."""
    paper = bgps_search(ScriptedLM(), LatentProbe(), GREEDY)
    printed = bgps_search(ScriptedLM(), LatentProbe(), replace(GREEDY, probe_term="log_mean"))
    assert paper.prompts[0].prompt == f"{PREFIX} nurse with a garden"
    assert printed.prompts[0].prompt == f"{PREFIX} nurse with intense focus"
    assert paper.prompts[0].probe_term == pytest.approx(math.log(0.3))
    assert printed.prompts[0].probe_term == pytest.approx(math.log(0.5))
    assert printed.prompts[0].probe_probability == pytest.approx(0.5)  # the mean, either way
    expected = lm_log_likelihood(["nurse", "with", "a", "garden", "<eos>"]) + 10 * math.log(0.3)
    assert paper.prompts[0].score == pytest.approx(expected)


PHRASE_BIGRAMS = {"start": {"nurse": 1.0}, "nurse": {"<eos>": 0.45, "in": 0.35, "smiling": 0.2},
                  "in": {"a": 1.0}, "a": {"garden": 1.0}, "garden": {"<eos>": 1.0}, "smiling": {"<eos>": 1.0}}


class PhraseLM(ScriptedLM):
    """"nurse" then "in a garden": the LLM is sure of "a" after "in" and "garden" after "a"."""

    def next_token_logprobs(self, sequences):
        rows = []
        for sequence in sequences:
            last = "start" if sequence[-1] == ID["<bos>"] else VOCAB[sequence[-1]]
            p = np.full(len(VOCAB), 1e-4)
            for word, q in PHRASE_BIGRAMS.get(last, {"<eos>": 1.0}).items():
                p[ID[word]] = q
            rows.append(np.log(p / p.sum()))
        return np.array(rows)


class GardenProbe:
    """p(female) 0.9 once the prompt says "garden", 0.2 before: "in" and "in a" carry nothing."""

    def __call__(self, prompts):
        return np.array([0.9 if "garden" in p else 0.2 for p in prompts])


def test_near_certain_tokens_complete_a_candidate_before_the_probe_scores_it():
    """Beam size 1: scored as it stands, "nurse in" (probe 0.2, like "nurse") loses to
    "nurse" + EOS and the garden is never reached; completed with the tokens the LLM is sure
    of, the candidate is "nurse in a garden" and the probe sees it."""
    settings = replace(GREEDY, target="female", beam_size=1, expansion=3, forbidden_names=())
    as_printed = bgps_search(PhraseLM(), GardenProbe(), replace(settings, complete_above=None))
    assert as_printed.texts == [f"{PREFIX} nurse"]
    completed = bgps_search(PhraseLM(), GardenProbe(), settings)
    best = completed.prompts[0]
    assert best.prompt == f"{PREFIX} nurse in a garden" and best.finished and best.tokens == 4
    lm = PhraseLM()
    ids = [ID["<bos>"]] + [ID[w] for w in ("nurse", "in", "a", "garden", "<eos>")]
    expected = sum(lm.next_token_logprobs([ids[:i]])[0, ids[i]] for i in range(1, len(ids)))
    assert best.lm_log_likelihood == pytest.approx(expected)  # the completed tokens are paid for
    assert best.score == pytest.approx(expected + 10 * math.log(0.9))
    # Completion stops at max_new_tokens: the beam is returned at its length, unfinished.
    short = bgps_search(PhraseLM(), GardenProbe(), replace(settings, max_new_tokens=3)).prompts[0]
    assert short.tokens <= 3


def test_lambda_sweep_trades_lm_likelihood_for_the_probe():
    sweep = lambda_sweep(ScriptedLM(), ScriptedProbe(), GREEDY, [0, 1, 10])
    assert list(sweep) == [0.0, 1.0, 10.0]
    assert sweep[0.0].texts == [f"{PREFIX} nurse"] and sweep[10.0].texts == [f"{PREFIX} nurse with intense focus"]
    best = [sweep[lam].prompts[0] for lam in sweep]
    assert [b.probe_probability for b in best[1:]] == sorted(b.probe_probability for b in best[1:])
    assert best[0].lm_log_likelihood >= best[-1].lm_log_likelihood


def test_lambda_zero_is_the_llm_alone():
    baseline = llm_baseline(ScriptedLM(), GREEDY)
    assert baseline.lam == 0.0
    assert baseline.texts == [f"{PREFIX} nurse"]
    assert baseline.prompts[0].score == baseline.prompts[0].lm_log_likelihood
    assert math.isnan(baseline.prompts[0].probe_probability)


def test_lambda_zero_ranking_does_not_depend_on_the_probe():
    settings = replace(GREEDY, lam=0.0, sample_first_token=True, sampling_factor=3, prompts=6, seed=3)
    runs = [bgps_search(ScriptedLM(), probe, settings) for probe in (None, ScriptedProbe(0.2), ScriptedProbe(0.7))]
    assert runs[0].texts == runs[1].texts == runs[2].texts
    for found in runs[1].prompts:
        assert found.score == found.lm_log_likelihood
    scores = [p.score for p in runs[1].prompts]
    assert scores == sorted(scores, reverse=True)
    # The probe only reports on the found prompts: one call, no search-time scoring.
    assert runs[1].candidates_scored == len(runs[1].prompts)
    assert runs[1].prompts[0].probe_probability == pytest.approx(0.2)


def test_prompts_naming_the_attribute_are_dropped():
    unfiltered = bgps_search(ScriptedLM(), ScriptedProbe(), replace(GREEDY, forbidden_names=()))
    assert unfiltered.prompts[0].prompt == f"{PREFIX} male nurse"  # naming the value wins Eq. 4...
    probe = ScriptedProbe()
    filtered = bgps_search(ScriptedLM(), probe, replace(GREEDY, sample_first_token=True, prompts=8))
    assert filtered.dropped_naming > 0
    assert not any(names_attribute(p, ["male"]) for p in filtered.texts + probe.seen)  # ...so it never gets scored


def test_same_settings_same_prompts_and_seeds_vary_them():
    settings = replace(GREEDY, sample_first_token=True, sampling_factor=3, temperature=2.0, prompts=4)
    first = bgps_search(ScriptedLM(), ScriptedProbe(), settings).to_dict()
    second = bgps_search(ScriptedLM(), ScriptedProbe(), settings).to_dict()
    first.pop("wall_s"), second.pop("wall_s")
    assert first == second
    found = {tuple(bgps_search(ScriptedLM(), ScriptedProbe(), replace(settings, seed=s, lam=0.0, prompts=1)).texts)
             for s in range(6)}
    assert len(found) > 1


def test_max_new_tokens_returns_the_best_of_live_and_finished_beams():
    result = bgps_search(ScriptedLM(), ScriptedProbe(), replace(GREEDY, max_new_tokens=3))
    best = result.prompts[0]
    assert best.prompt == f"{PREFIX} nurse with intense" and not best.finished and best.tokens == 3


def test_min_new_tokens_holds_back_eos():
    free = bgps_search(ScriptedLM(), None, replace(GREEDY, lam=0.0)).prompts[0]
    assert (free.prompt, free.tokens) == (f"{PREFIX} nurse", 1)  # EOS after one token is likeliest
    result = bgps_search(ScriptedLM(), None, replace(GREEDY, lam=0.0, min_new_tokens=2))
    assert all(p.tokens >= 2 for p in result.prompts)
    best = result.prompts[0]
    # The likeliest of two tokens or more: "with a garden" and "with intense focus" (0.075 each)
    # beat "smiling" (0.05); EOS is allowed again after them.
    assert best.finished and best.prompt in {f"{PREFIX} nurse with a garden", f"{PREFIX} nurse with intense focus"}


def test_progress_reports_every_beam_step():
    seen = []
    bgps_search(ScriptedLM(), ScriptedProbe(), replace(GREEDY, prompts=2), progress=seen.append)
    assert [p.run for p in seen] == sorted(p.run for p in seen)
    assert seen[0].step == 0 and seen[-1].prompts_found == 1 and seen[-1].runs == 2
    assert all(math.isfinite(p.best_score) and p.best_prompt.startswith(PREFIX) for p in seen)


def test_names_attribute_matches_whole_words_and_phrases():
    assert names_attribute("a photo of a Male nurse", ["male"])
    assert not names_attribute("a photo of a female nurse", ["male"])
    assert names_attribute("a middle-aged doctor", ["middle-aged"])
    assert not names_attribute("a photo of an aged-care nurse", ["aged"])
    assert names_attribute("a nurse with dark skin", ["with dark skin"])
    assert not names_attribute("anything", [])
    # Issue #37: a byte-level LM glues words; a long name inside one still names the value.
    assert names_attribute("a photo of a person working as a doctor inmiddle-aged nurse", ["middle-aged"])
    assert not names_attribute("a photo of a female nurse", ["male"])  # short names: whole words only
    assert names_attribute("a photo of a person working as a librarian ifto-aged nurse", ["aged"])
    assert not names_attribute("a photo of an aged-care nurse", ["aged"])


def test_join_prompt_spaces_words_but_not_punctuation():
    assert join_prompt("a photo of a", "nurse") == "a photo of a nurse"
    assert join_prompt("a photo of a", " nurse") == "a photo of a nurse"
    assert join_prompt("a photo of a nurse", ", smiling") == "a photo of a nurse, smiling"


def test_evaluation_gives_shares_with_intervals_and_perplexity():
    counts = {"p1": (9, 10), "p2": (5, 10), "a male p3": (10, 10)}
    evaluation = evaluate_prompts(list(counts), counts.__getitem__, perplexity=lambda texts: np.arange(len(texts)) + 2.0,
                                  forbidden_names=["male"])
    assert [s.share.value for s in evaluation.per_prompt] == [0.9, 0.5, 1.0]
    assert evaluation.per_prompt[0].share.method == "wilson" and evaluation.per_prompt[0].share.low < 0.9
    assert evaluation.pooled_share.value == pytest.approx(24 / 30)
    assert evaluation.mean_share.value == pytest.approx(0.8)
    assert evaluation.mean_share.low <= 0.8 <= evaluation.mean_share.high
    assert evaluation.perplexity == (2.0, 3.0, 4.0) and evaluation.mean_perplexity == 3.0
    assert evaluation.naming_share == pytest.approx(1 / 3)
    assert evaluation.max_share.prompt == "a male p3"


def test_a_lock_entry_written_before_probe_term_reads_as_the_search_it_was():
    """0.1.0's entries have no probe_term or complete_above: they searched with Eq. 4's log
    of the mean and no completion, and read back so (not as today's defaults)."""
    from dataclasses import asdict

    from pytest_t2ibias.methods.bgps import BGPSResult, settings_as_searched

    written = {k: v for k, v in asdict(GREEDY).items() if k not in ("probe_term", "complete_above")}
    result = BGPSResult.from_dict({"prompts": [], "settings": written})
    assert result.settings == replace(GREEDY, probe_term="log_mean", complete_above=None)
    assert settings_as_searched(asdict(GREEDY)) == asdict(GREEDY)  # a newer entry as written
