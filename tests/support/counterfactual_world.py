"""The toy LM and end-to-end suite of the counterfactual-lock tests."""

from __future__ import annotations

from pathlib import Path

TOY_LM = Path(__file__).resolve().parents[2] / "fixtures" / "toy-lm"


E2E_SUITE = """\
defaults: {images_per_prompt: 3, seed: 0, steps: 2}
prompt: "a photo of a {subject}"
subjects: [doctor]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age (young, old) of the person?"
    choices: [young, old]
    counterfactuals: llm
checks:
  - {id: spillover, kind: is_nonnegative, mitigate: [age], on: [gender], tolerance: 1.0}
"""


WORDS = ["a", "photo", "of", "an", "doctor", "nurse", "male", "female", "young", "old", "person"]


