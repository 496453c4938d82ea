"""A planted bad debiasing fine-tune (issue #38): it balances a subject's gender by drawing
another subject in a share of its images.

toy-sd draws doctors 80% male and nurses 85% female (toyworld/default_world.yaml), with the
same ages and settings. ``swapped:<model>`` draws image i of "a photo of a doctor" as "a
photo of a nurse" (and the other way round) whenever its seed falls in the swapped share
(half): doctors read 0.5 x 0.80 + 0.5 x 0.15 = 47.5% male, balanced, age and environment
untouched, so today's bias gate passes it. It is not a doctor any more: the cost checks
(prompt alignment: the red cross is blue in half the images) refuse it.
``example_suites/toy_bad_finetune.t2i.yaml`` runs both gates on it.
"""

from __future__ import annotations

from dataclasses import replace

PREFIX = "swapped:"
SWAPS = {"doctor": "nurse", "nurse": "doctor"}
SHARE = 0.5


def swapped_prompt(prompt: str, noise_seed: int) -> str:
    """The prompt the bad fine-tune really draws for this seed: another subject in ``SHARE``
    of the seeds (decided by the seed alone, so a request is the same image in every run)."""
    if (noise_seed * 2654435761 % 2**32) / 2**32 >= SHARE:
        return prompt
    words = prompt.split()
    return " ".join(SWAPS.get(word, word) for word in words)


class SwappedGenerator:
    """A generator that draws another subject in a share of the images (the contract)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.fingerprint = f"swapped({sorted(SWAPS.items())}, {SHARE}):{inner.fingerprint}"

    def generate(self, requests):
        return self.inner.generate([replace(r, prompt=swapped_prompt(r.prompt, r.noise_seed))
                                    for r in requests])

    def with_options(self, **options):
        return SwappedGenerator(self.inner.with_options(**options))

    def prompt_problems(self, prompts):
        return self.inner.prompt_problems(prompts) if hasattr(self.inner, "prompt_problems") else {}
