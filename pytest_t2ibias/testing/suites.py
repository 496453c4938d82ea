"""Suites built from the registry for tests that must cover every kind (report integrity,
the compatibility matrix, adding a kind): each kind's ``CheckKind.sample`` entry under one
head, so a kind registered anywhere is in them with no test edited."""

from __future__ import annotations

from collections.abc import Iterable

SAMPLE_HEAD = """\
suite: every
defaults: {images_per_prompt: 4, seed: 0}
prompt: "a photo of a {subject}"
subjects: [nurse]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age of the person?"
    choices: [young, old]
    counterfactuals: {young: "a photo of a young {subject}", old: "a photo of an old {subject}"}
checks:
"""


def sample_entry(name: str) -> str:
    """``{id: k_<name>, kind: <name>, <its sample keys>}``; a kind without a sample is refused
    by name (declare ``CheckKind.sample``)."""
    from ..kinds import CHECK_KINDS

    sample = CHECK_KINDS[name].sample
    if sample is None:
        raise LookupError(f"check kind {name!r} declares no sample entry (CheckKind.sample)")
    return "{" + ", ".join(filter(None, [f"id: k_{name}", f"kind: {name}", sample])) + "}"


def every_kind_suite(kinds: Iterable[str] | None = None, head: str = SAMPLE_HEAD) -> str:
    """The sample suite with one check of each of ``kinds`` (default: every registered kind)."""
    from ..kinds import CHECK_KINDS

    names = list(CHECK_KINDS) if kinds is None else list(kinds)
    return head + "".join(f"  - {sample_entry(name)}\n" for name in names)
