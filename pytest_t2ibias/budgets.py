"""The work one run may hold: one set of budgets, read by the suite loader and the options
(per value), the session plan and the progress tally (per run), and said at startup.

The suite loader bounds what a file can say (its size, nesting, items); these bound what the
selected checks together ask for, before anything is built for it: a valid suite of 100
subjects at 100,000 images per prompt once grew to 2.9 GB in the progress tally before the
first image, and ``--t2i-images-per-prompt=99999999999999999999`` to 6.7 GB.
"""

from __future__ import annotations

MAX_IMAGES_PER_PROMPT = 100_000
"""Most images a check may ask for a prompt (suite, ``defaults`` and the command line)."""
MAX_IMAGE_SIDE = 4_096
"""Largest ``height``/``width`` in pixels (four times SDXL's 1,024; 40,000 once tried a
1.6 GB allocation and ended in a RuntimeError)."""
MAX_RUN_IMAGES = 1_000_000
"""Most distinct images the selected checks may plan in one run: the session plan holds a
request for each (about 200 bytes), and at a second an image it is eleven days of a GPU."""
MAX_RUN_ANSWERS = 10_000_000
"""Most distinct answers (image x question) the selected checks may plan in one run."""


def describe() -> str:
    """The budgets in one line, for the run's header."""
    return (f"t2ibias: budgets: at most {MAX_IMAGES_PER_PROMPT:,} images a prompt, "
            f"{MAX_IMAGE_SIDE:,} px a side, {MAX_RUN_IMAGES:,} images and "
            f"{MAX_RUN_ANSWERS:,} answers planned a run")


def over_budget(images: int, answers: int) -> str | None:
    """What a run planning ``images`` and ``answers`` exceeds; None if it fits."""
    if images > MAX_RUN_IMAGES:
        return f"{images:,} images, more than the {MAX_RUN_IMAGES:,} a run may plan"
    if answers > MAX_RUN_ANSWERS:
        return f"{answers:,} answers, more than the {MAX_RUN_ANSWERS:,} a run may plan"
    return None
