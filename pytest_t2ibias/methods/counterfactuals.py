"""Counterfactual prompts phrased by a language model (``counterfactuals: llm``).

BiasConnect (Sec. 3, Table 2) needs, for every value v of an axis x, a prompt CF_x^v: the
original prompt P naming v ("a photo of a doctor" -> "a photo of an old doctor"). A suite may
write them as templates; for an axis with ``counterfactuals: llm`` they are chosen here, per
subject, from the words w that name v (the axis' ``phrases``, default the value itself):

1. Candidates (in this order, which also breaks ties):
   - ``before_subject``: w before the subject, the indefinite article made to agree with w
     ("a photo of an old doctor", never "a old doctor");
   - ``who_is``: "a photo of a doctor who is w";
   - ``after_prompt``: "P w" ("a photo of a doctor working outdoors");
   - ``few_shot``: the LLM's own phrasing, from examples that are the suite's template
     counterfactuals for the same subject, one line each ("a photo of a doctor + male -> a
     photo of a male doctor"), when the suite has any: the greedy continuation of the lines
     for a base model; for an instruction-tuned one (its tokenizer has a chat template), its
     answer to an instruction holding them as a user turn, so it answers in its own format.
     A reply the token budget cut before its line ended is rejected, and says so.
2. Filter: a candidate must name the subject and w as whole words; a continuation may not.
3. Rank: mean per-token log-likelihood under the LLM, the natural-language prior BGPS (Eq. 4)
   also scores with; the mean, not the sum, so a longer phrasing is not punished for length.

Nothing is sampled, so one LLM always makes the same choices; the lock file
(``pytest_t2ibias.locks.counterfactual``) freezes them for review.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

if TYPE_CHECKING:
    from ..backends._base import ChatModel, LanguageModel
    from ..suite_spec import Suite

SOURCES = ("before_subject", "who_is", "after_prompt", "few_shot")
FEW_SHOT_EXAMPLES = 3
FEW_SHOT_LINE = "{original} + {phrase} -> {counterfactual}"
MAX_NEW_TOKENS = 32
"""The default reply budget: one prompt line (``--t2i-llm-tokens`` sets another)."""
CHAT_INSTRUCTION = ("Rewrite an image prompt so that it also names the given words, changing "
                    "as little as possible. Answer with the rewritten prompt only, on one line.\n"
                    "Examples, one a line (prompt + words -> rewritten prompt):\n{examples}\n"
                    "Now rewrite: {query}")
RANKING = "mean token log-likelihood (natural log); ties go to the earlier candidate"

# Spelling exceptions to "an before a vowel letter": the sound decides, not the letter.
_A_BEFORE_VOWEL_LETTER = ("uni", "use", "usu", "uti", "ure", "eu", "ewe", "one", "once")
_AN_BEFORE_CONSONANT_LETTER = ("hour", "honest", "honor", "honour", "heir")


@dataclass(frozen=True)
class Candidate:
    """One phrasing considered; ``rejected`` says why it was not ranked."""

    prompt: str
    source: str
    mean_log_likelihood: float | None = None
    rejected: str | None = None


@dataclass(frozen=True)
class Choice:
    """The chosen counterfactual prompt and every candidate, best first, rejected last."""

    prompt: str
    candidates: tuple[Candidate, ...]


def generation_settings(llm: LanguageModel | None = None,
                        max_new_tokens: int = MAX_NEW_TOKENS) -> dict[str, Any]:
    """What decides the choices besides the LLM: recorded in the lock file for reviewers."""
    return {
        "candidates": list(SOURCES),
        "ranking": RANKING,
        "decoding": {"strategy": "greedy", "do_sample": False, "num_beams": 1,
                     "max_new_tokens": max_new_tokens},
        "few_shot_examples": FEW_SHOT_EXAMPLES,
        "few_shot_line": FEW_SHOT_LINE,
        "few_shot_format": "chat template (user turn)" if chats(llm) else "text continuation",
    }


def chats(llm: LanguageModel | None) -> TypeGuard[ChatModel]:
    """Whether the LLM is asked through its chat template (``reply``) rather than continued."""
    return bool(getattr(llm, "has_chat_template", False)) and hasattr(llm, "reply")


# -- 1. candidates ------------------------------------------------------------------------------


def indefinite_article(phrase: str) -> str:
    """ "a" or "an" for the words that follow it ("an old", "a young", "a uniformed")."""
    word = phrase.split()[0].lower() if phrase.split() else ""
    if word.startswith(_AN_BEFORE_CONSONANT_LETTER):
        return "an"
    if word.startswith(_A_BEFORE_VOWEL_LETTER):
        return "a"
    return "an" if word[:1] in ("a", "e", "i", "o", "u") else "a"


def around_subject(template: str, subject: str) -> tuple[str, str]:
    """The prompt's text before and after the first ``{subject}`` (literal braces undone)."""
    before: list[str] = []
    after: list[str] = []
    seen = False
    for literal, field_name, _, _ in string.Formatter().parse(template):
        (after if seen else before).append(literal)
        if field_name is not None:
            if seen:
                after.append(subject)
            seen = True
    return "".join(before), "".join(after)


def rule_candidates(template: str, subject: str, phrase: str) -> list[Candidate]:
    """The three fixed phrasings of the prompt naming ``phrase`` (step 1, first three)."""
    before, after = around_subject(template, subject)
    head = before.rstrip()
    words = head.split()
    if words and words[-1].lower() in ("a", "an"):
        article = indefinite_article(phrase)
        if words[-1][0].isupper():
            article = article.capitalize()
        head = head[: len(head) - len(words[-1])] + article
    spaced_head = f"{head} " if head else ""
    original = f"{before}{subject}{after}"
    return [
        Candidate(f"{spaced_head}{phrase} {subject}{after}", "before_subject"),
        Candidate(f"{before}{subject} who is {phrase}{after}", "who_is"),
        Candidate(f"{original.rstrip().rstrip('.')} {phrase}", "after_prompt"),
    ]


def few_shot_prompt(original: str, phrase: str, examples: Sequence[tuple[str, str, str]]) -> str:
    """Example lines (original, phrase, counterfactual), then the line to complete."""
    lines = [FEW_SHOT_LINE.format(original=o, phrase=p, counterfactual=c) for o, p, c in examples]
    query = FEW_SHOT_LINE.format(original=original, phrase=phrase, counterfactual="").rstrip()
    return "\n".join([*lines, query])


def chat_instruction(original: str, phrase: str, examples: Sequence[tuple[str, str, str]]) -> str:
    """The few-shot lines as one instruction, for a model that answers a chat template."""
    lines = "\n".join(FEW_SHOT_LINE.format(original=o, phrase=p, counterfactual=c)
                      for o, p, c in examples)
    query = FEW_SHOT_LINE.format(original=original, phrase=phrase, counterfactual="").rstrip()
    return CHAT_INSTRUCTION.format(examples=lines, query=query)


def answer_line(text: str, original: str, phrase: str) -> str:
    """The rewritten prompt in a reply: its first non-empty line, without quotes or an echo
    of the question's own line (``original + phrase ->``), which chat models often repeat."""
    line = next((row.strip() for row in text.splitlines() if row.strip()), "")
    echo = FEW_SHOT_LINE.format(original=original, phrase=phrase, counterfactual="").rstrip()
    return line.removeprefix(echo).strip().strip("\"'").strip()


def few_shot_candidate(llm: LanguageModel, original: str, phrase: str, room_for: str,
                       examples: Sequence[tuple[str, str, str]],
                       max_new_tokens: int = MAX_NEW_TOKENS) -> Candidate | None:
    """The LLM's own phrasing (``chats``: its answer to the chat instruction; else the greedy
    continuation of the few-shot lines), up to the end of its line.

    Examples are dropped from the end until the prompt leaves room in the LLM's context for a
    reply as long as ``room_for`` (a rule candidate); None without examples.
    """
    if not examples:
        return None
    chat = llm if chats(llm) else None
    limit = getattr(llm, "context_length", None)
    count = getattr(llm, "count_tokens", None)
    count_prompt = getattr(llm, "count_instruction_tokens", None) if chat is not None else count
    for kept in range(len(examples), 0, -1):
        prompt = (chat_instruction if chat is not None else few_shot_prompt)(original, phrase, examples[:kept])
        new_tokens = max_new_tokens
        if limit is not None and count is not None and count_prompt is not None:
            room = limit - count_prompt(prompt)
            if room < count(room_for):
                continue
            new_tokens = min(max_new_tokens, room)
        if chat is None:
            continuation = llm.complete(prompt, max_new_tokens=new_tokens)
            return Candidate(continuation.split("\n", 1)[0].strip().strip("\"'"), "few_shot")
        reply = chat.reply(prompt, max_new_tokens=new_tokens)
        line = answer_line(reply.text, original, phrase)
        if reply.cut and "\n" not in reply.text.strip():
            return Candidate(line, "few_shot", rejected=f"cut by the token budget ({new_tokens} "
                                                        f"new tokens; --t2i-llm-tokens)")
        return Candidate(line, "few_shot")
    return Candidate("", "few_shot", rejected=f"the LLM's context ({limit} tokens) is too "
                                              f"short for one example and an answer")


# -- 2. filter ----------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def names(text: str, words: str) -> bool:
    """Whether ``text`` contains ``words`` as consecutive whole words ("middle-aged" too)."""
    haystack, needle = _words(text), _words(words)
    return bool(needle) and any(haystack[i:i + len(needle)] == needle
                                for i in range(len(haystack) - len(needle) + 1))


def rejection(candidate: Candidate, subject: str, phrase: str, llm: LanguageModel) -> str | None:
    if not candidate.prompt:
        return "empty continuation"
    if not names(candidate.prompt, phrase):
        return f"does not name {phrase!r}"
    if not names(candidate.prompt, subject):
        return f"does not name the subject {subject!r}"
    limit = getattr(llm, "context_length", None)
    count = getattr(llm, "count_tokens", None)
    if limit is not None and count is not None and count(candidate.prompt) + 1 > limit:
        return f"longer than the LLM's context ({limit} tokens)"
    return None


# -- 3. rank ------------------------------------------------------------------------------------


def mean_log_likelihoods(llm: LanguageModel, texts: list[str]) -> np.ndarray:
    """Mean log-probability per token; an LLM with only the protocol's sums is averaged per
    word (plus one for the end of text) instead."""
    per_token = getattr(llm, "token_log_likelihoods", None)
    if per_token is not None:
        sums, counts = per_token(texts)
    else:
        sums = np.asarray(llm.log_likelihood(texts), dtype=float)
        counts = np.array([len(text.split()) + 1 for text in texts])
    means: np.ndarray = np.asarray(sums, dtype=float) / np.maximum(np.asarray(counts, dtype=float),
                                                                   1.0)
    return means


def choose_counterfactual(llm: LanguageModel, template: str, subject: str, phrase: str,
                          examples: Sequence[tuple[str, str, str]] = (),
                          max_new_tokens: int = MAX_NEW_TOKENS) -> Choice:
    """Steps 1-3 for one (prompt template, subject, value phrase)."""
    candidates = rule_candidates(template, subject, phrase)
    original = template.format(subject=subject)
    learned = few_shot_candidate(llm, original, phrase, candidates[0].prompt, examples,
                                 max_new_tokens)
    if learned is not None and learned.prompt not in [c.prompt for c in candidates]:
        candidates.append(learned)
    reasons = [c.rejected or rejection(c, subject, phrase, llm) for c in candidates]
    ranked = [c for c, reason in zip(candidates, reasons) if reason is None]
    scores = [float(s) for s in mean_log_likelihoods(llm, [c.prompt for c in ranked])] if ranked \
        else []
    scored = [Candidate(c.prompt, c.source, s) for c, s in zip(ranked, scores)]
    order = sorted(range(len(scored)), key=lambda i: -scores[i])  # stable
    rejected = [Candidate(c.prompt, c.source, rejected=reason)
                for c, reason in zip(candidates, reasons) if reason is not None]
    best = scored[order[0]] if scored else candidates[0]  # before_subject always names both
    return Choice(best.prompt, tuple([scored[i] for i in order] + rejected))


def template_examples(suite: Suite, subject: str, limit: int = FEW_SHOT_EXAMPLES
                      ) -> list[tuple[str, str, str]]:
    """(original, value, counterfactual) from the suite's template axes, taking each axis'
    first value, then each one's second, ... so the examples show several axes."""
    original = suite.prompt_for(subject)
    per_axis = [[(original, axis.phrase(value), template.format(subject=subject))
                 for value, template in axis.counterfactuals.items()]
                for axis in suite.axes.values()
                if axis.counterfactuals and not axis.counterfactuals_from_llm]
    examples = [row[i] for i in range(max(map(len, per_axis), default=0))
                for row in per_axis if i < len(row)]
    return examples[:limit]


def suite_counterfactuals(llm: LanguageModel, suite: Suite, max_new_tokens: int = MAX_NEW_TOKENS
                          ) -> dict[str, dict[str, dict[str, Choice]]]:
    """axis -> subject -> value -> ``Choice``, for every axis with ``counterfactuals: llm``."""
    chosen: dict[str, dict[str, dict[str, Choice]]] = {}
    for axis in suite.axes.values():
        if not axis.counterfactuals_from_llm:
            continue
        chosen[axis.name] = {
            subject: {value: choose_counterfactual(llm, suite.prompt, subject, axis.phrase(value),
                                                   template_examples(suite, subject),
                                                   max_new_tokens)
                      for value in axis.choices}
            for subject in suite.subjects
        }
    return chosen


def as_template(prompt: str, subject: str) -> str:
    """A chosen prompt back as a suite template: braces escaped, the subject's first
    whole-word occurrence as ``{subject}`` (InterMit composes templates word by word)."""
    escaped = prompt.replace("{", "{{").replace("}", "}}")
    pattern = re.compile(rf"(?<!\w){re.escape(subject)}(?!\w)")
    return pattern.sub("{subject}", escaped, count=1)
