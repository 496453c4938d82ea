"""The OpenBias lock file: the biases proposed for a suite's captions, frozen beside the suite.

``x.t2i.yaml`` -> ``x.t2i.openbias.lock.json``, one entry per ``open_set`` check and subject
(``check_id/subject``, or the name given to ``t2ibias.openbias``): the captions, the proposing
LLM (None: the shipped knowledge base alone) and the knowledge base's hash, and every proposal
kept (name, classes, captions, questions, CLIP statements) with the counts of those thrown away
(malformed JSON, present in the caption, fewer than two classes, a caption naming a class).

- entry present and matching (captions, LLM, knowledge base, selection): used as written, no
  LLM loaded, so CI needs none;
- missing: proposed (with ``--t2i-llm`` when set, else from the knowledge base) and written
  atomically under a file lock;
- stale: an error naming the file and what differs; ``--t2i-update-locks`` proposes again.

Under ``protocol: paper`` (no knowledge base, as the paper) the proposals live in their own
``x.t2i.openbias.paper.lock.json`` (``_file.lock_path``): a gate run never reads them, nor a
paper run the gate's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendError, LockfileError
from ..methods.openbias import (
    JUDGE_IMAGES,
    KNOWLEDGE_BASE,
    PROPOSAL_TOKENS,
    OpenBiasResult,
    Proposals,
    audit_prompts,
    caption_subject,
    load_knowledge_base,
    measure_biases,
    propose_biases,
    synonym_classes,
    write_captions,
)
from ._file import (
    GATE,
    UPDATE_OPTION,
    LockFormat,
    frozen_refusal,
    llm_changed,
    llm_weights,
    lock_path,
    note_used,
    shown_model,
    writing,
)

if TYPE_CHECKING:
    from ..instrument import Instrument

LOCK_VERSION = 1
ABOUT = ("Biases OpenBias proposed for the suite's open-set checks (pytest-t2ibias). Commit this "
         "file: CI measures them without an LLM. Regenerate with --t2i-update-locks and review "
         "the diff.")


def openbias_lock_path(suite_path: Path, protocol: str = GATE) -> Path:
    """``x.t2i.yaml`` -> ``x.t2i.openbias.lock.json`` (``.openbias.paper.lock.json`` under
    ``protocol: paper``), in the suite's folder."""
    return lock_path(suite_path, "openbias", protocol)


def knowledge_base_hash(path: Path = KNOWLEDGE_BASE) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def locked_proposals(instrument: Instrument, suite_path: Path, key: str, captions: Sequence[str],
                     *, subject: str | None = None, only: Sequence[str] | None = None,
                     max_biases: int | None = None, knowledge_base: str = "floor",
                     llm_captions: int | None = None, update: bool = False,
                     protocol: str = GATE) -> Proposals:
    """The proposals for ``captions`` (and, with ``llm_captions``, that many captions of
    ``subject`` the LLM writes) from ``protocol``'s lock beside the suite, proposing when
    missing."""
    settings = instrument.models.settings
    wanted = {"captions": list(captions), "subject": subject,
              "knowledge_base": knowledge_base_hash(),
              "only": sorted(only) if only else None, "max_biases": max_biases,
              # recorded when not the default, so locks written before it stay valid
              **({"knowledge_base_use": knowledge_base} if knowledge_base != "floor" else {}),
              **({"llm_captions": llm_captions} if llm_captions else {})}
    path = openbias_lock_path(Path(suite_path), protocol)
    # The LLM as a path relative to the lock and its weights' fingerprint, so a lock reads the
    # same in any checkout; it is compared only when --t2i-llm is set (CI may have none).
    which_llm = {"llm": shown_model(settings.llm, path.parent) if settings.llm else None,
                 "llm_weights": llm_weights(settings.llm) if settings.llm else None}
    record = _read(path, protocol)
    entry = record["entries"].get(key)
    if entry is None and getattr(settings, "frozen_locks", False) and not update:
        raise frozen_refusal(path, f"OpenBias proposals for {key!r}", at=Path(suite_path))
    note_used(path, key)
    if entry is not None and not update:
        problems = [f"{field}: lock has {entry.get(field)!r}, the suite wants {value!r}"
                    for field, value in wanted.items() if entry.get(field) != value]
        other_llm = llm_changed(settings.llm, entry.get("llm_weights"), entry.get("llm"))
        if other_llm:
            problems.append(other_llm)
        locked = Proposals.from_dict(entry["proposals"])
        problems += [f"classes that are one class spelled twice ({found}): proposed before "
                     f"synonyms were merged, severity divides by too many classes"
                     for found in synonym_classes(locked, load_knowledge_base())]
        if problems:
            raise LockfileError(path, 1, f"OpenBias lock entry {key!r} is stale ("
                                         + "; ".join(problems) + f"); rerun with {UPDATE_OPTION} "
                                         "to propose again, and review the diff")
        return locked
    asks_llm = settings.llm and (knowledge_base != "only" or llm_captions)
    llm = proposal_llm(instrument.models.llm, settings.llm_tokens) if asks_llm else None
    written: dict[str, Any] = {}
    if llm_captions:
        if llm is None:
            raise BackendError(f"llm_captions: {llm_captions} asks the LLM to write captions of "
                               f"{subject!r}, but --t2i-llm is not set (command line or ini "
                               f"key t2i_llm)")
        lines, rejected = write_captions(llm, subject or caption_subject(captions[0]), llm_captions)
        captions = list(dict.fromkeys([*captions, *lines]))
        written = {"written_captions": lines, "rejected_caption_lines": rejected}
    kb = load_knowledge_base()
    proposals = propose_biases(captions, knowledge_base=kb, llm=llm,
                               subject_of=(lambda _caption: subject) if subject else None,
                               only=only, max_biases=max_biases, use_knowledge_base=knowledge_base)
    with writing(path):
        record = _read(path, protocol)
        record["entries"][key] = {**wanted, **which_llm, **written,
                                  "proposals": proposals.to_dict()}
        record["entries"] = dict(sorted(record["entries"].items()))
        FORMAT.write(path, record)
    return proposals


def locked_entry(suite_path: Path, key: str, protocol: str = GATE
                 ) -> tuple[Proposals, list[str]] | None:
    """A lock entry's proposals and the captions the LLM wrote, read without a model (for the
    plan and the progress total); None when ``protocol``'s lock does not hold ``key`` yet."""
    try:
        entry = _read(openbias_lock_path(Path(suite_path), protocol), protocol)["entries"].get(key)
        if not entry:
            return None
        return (Proposals.from_dict(entry["proposals"]),
                [str(c) for c in entry.get("written_captions") or ()])
    except (LockfileError, OSError, KeyError, TypeError, ValueError):
        return None  # a broken lock is the run's error to report, in full


def locked_prompts(suite_path: Path, key: str, protocol: str = GATE
                   ) -> tuple[list[str], list[str]] | None:
    """A lock entry's captions the LLM wrote and its judge audit's prompts; None when the
    lock does not hold ``key`` yet."""
    locked = locked_entry(suite_path, key, protocol)
    if locked is None:
        return None
    proposals, written = locked
    return written, list(dict.fromkeys(p for bias in proposals.biases for p in audit_prompts(bias)))


def proposal_llm(lm: Any, max_new_tokens: int | None = None) -> Callable[[str], Any]:
    """The LLM as OpenBias asks it: through its chat template with a budget a JSON list fits
    (``reply``, reporting a cut), or ``complete`` for an LLM that has no ``reply`` (a hook's)."""
    budget = max_new_tokens or PROPOSAL_TOKENS
    if hasattr(lm, "reply"):
        return lambda prompt: lm.reply(prompt, max_new_tokens=budget)
    return lambda prompt: lm.complete(prompt, max_new_tokens=budget)


def run_openbias(instrument: Instrument, suite_path: Path, key: str, captions: Sequence[str], *,
                 subject: str | None = None, only: Sequence[str] | None = None,
                 max_biases: int | None = None, knowledge_base: str = "floor",
                 llm_captions: int | None = None, update: bool = False,
                 confidence: float = 0.95, n_resamples: int = 2000,
                 judge_images: int = JUDGE_IMAGES,
                 judge_correction: str = "on", unknown_answer: bool = False,
                 abstain_below: float = 0.0, protocol: str = GATE) -> OpenBiasResult:
    """Proposals (locked under ``protocol``) then measurement: the ranked table of
    discovered biases."""
    proposals = locked_proposals(instrument, suite_path, key, captions, subject=subject,
                                 only=only, max_biases=max_biases, knowledge_base=knowledge_base,
                                 llm_captions=llm_captions, update=update, protocol=protocol)
    return measure_biases(instrument, proposals, confidence=confidence, n_resamples=n_resamples,
                          judge_images=judge_images, judge_correction=judge_correction,
                          unknown_answer=unknown_answer, abstain_below=abstain_below)


def _read(path: Path, protocol: str = GATE) -> dict[str, Any]:
    """The lock's record, or an empty one of this version when there is none."""
    return FORMAT.read(path, protocol) or FORMAT.new(protocol, entries={})


def _shape_problem(record: dict[str, Any]) -> str | None:
    return None if isinstance(record.get("entries"), dict) else "'entries' missing or not an object"


FORMAT = LockFormat("OpenBias", LOCK_VERSION, ABOUT, _shape_problem, version_key="version")
