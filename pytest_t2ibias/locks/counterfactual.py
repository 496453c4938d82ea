"""The counterfactual lock file: the prompts ``counterfactuals: llm`` chose, frozen beside the suite.

``occupations.t2i.yaml`` -> ``occupations.t2i.lock.json`` holds the LLM (as given, its weights'
fingerprint and hub revision, the backend's fingerprint), the generation settings, the suite's
prompt and subjects, and per axis -> subject -> value the chosen prompt with every candidate's
score: a pull request shows what the images will be generated from, and why.

JSON rather than YAML: the standard library reads and writes it the same everywhere (no quoting
rules for yes/no/on, no folded long lines, floats round-trip), and written one field a line in
the suite's order, a regenerated lock diffs line by line.

- present and covering the suite (same prompt, subjects, ``llm`` axes and their phrases; and the
  same LLM weights when ``--t2i-llm`` is set): used as written; no LLM is loaded;
- missing: generated with ``--t2i-llm`` and written atomically under a file lock, so
  pytest-xdist workers racing for it write it once and the others read it;
- stale: an error naming the file and what differs; ``--t2i-update-locks`` regenerates it;
- unreadable: an error naming the file. A lock is only ever replaced by ``--t2i-update-locks``.

Under ``protocol: paper`` the prompts live in their own ``x.t2i.paper.lock.json``
(``_file.lock_path``), which says so: a gate run never reads it, nor a paper run the gate's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LockfileError
from ._file import (
    GATE,
    UPDATE_OPTION,
    LockFormat,
    frozen_refusal,
    llm_changed,
    llm_weights,
    lock_path,
    shown_model,
    write_text,
    writing,
)

if TYPE_CHECKING:
    from ..backends._base import LanguageModel
    from ..methods.counterfactuals import Choice
    from ..suite_spec import Suite

LOCK_VERSION = 1
ABOUT = ("Counterfactual prompts pytest-t2ibias chose for the suite's axes with "
         "`counterfactuals: llm`. Commit this file; regenerate it with --t2i-update-locks "
         "and review the diff.")

log = logging.getLogger("pytest_t2ibias.counterfactuals")


def requirements(suite: Suite) -> dict[str, Any]:
    """What a lock must cover: the prompt, the subjects, and value -> phrase per ``llm`` axis."""
    return {
        "prompt": suite.prompt,
        "subjects": list(suite.subjects),
        "axes": {axis.name: {value: axis.phrase(value) for value in axis.choices}
                 for axis in suite.axes.values() if axis.counterfactuals_from_llm},
    }


# -- the lock -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CounterfactualLock:
    path: Path
    record: dict[str, Any]

    def prompts(self, axis: str, subject: str) -> dict[str, str]:
        """value -> chosen prompt of one axis for one subject."""
        entries = self.record["axes"][axis]["prompts"][subject]
        return {value: entry["prompt"] for value, entry in entries.items()}

    def differences(self, wanted: dict[str, Any], llm_model: str | None) -> list[str]:
        """Why this lock does not fit the suite (``requirements``) and LLM; empty if it does."""
        record, found = self.record, []
        if record["prompt"] != wanted["prompt"]:
            found.append(f"the prompt is now {wanted['prompt']!r}, the lock has {record['prompt']!r}")
        added = [s for s in wanted["subjects"] if s not in record["subjects"]]
        removed = [s for s in record["subjects"] if s not in wanted["subjects"]]
        if added or removed:
            found.append(f"subjects changed (added {added}, removed {removed})")
        for axis, phrases in wanted["axes"].items():
            locked_axis = record["axes"].get(axis)
            if locked_axis is None:
                found.append(f"axis {axis!r} is not in the lock")
            elif locked_axis["phrases"] != phrases:
                found.append(f"axis {axis!r}: values/phrases are now {phrases}, the lock has "
                             f"{locked_axis['phrases']}")
            elif not (added or removed):
                found.extend(_uncovered(axis, locked_axis, wanted["subjects"], phrases))
        found.extend(f"axis {axis!r} is in the lock but no longer has counterfactuals: llm"
                     for axis in record["axes"] if axis not in wanted["axes"])
        other_llm = llm_changed(llm_model, record["llm"]["weights"], record["llm"].get("model"))
        return found + ([other_llm] if other_llm else [])

    def apply(self, suite: Suite, subject: str) -> Suite:
        """``suite`` with the locked prompts of ``subject`` as its ``llm`` axes' templates."""
        from ..methods.counterfactuals import as_template

        if subject not in self.record["subjects"]:
            raise LockfileError(self.path, 1, f"subject {subject!r} is not in the lock (it has "
                                              f"{self.record['subjects']}); add it to the suite's "
                                              f"subjects and rerun with {UPDATE_OPTION}")
        axes = {
            name: replace(axis, counterfactuals={value: as_template(prompt, subject) for value, prompt
                                                 in self.prompts(name, subject).items()})
            if axis.counterfactuals_from_llm else axis
            for name, axis in suite.axes.items()
        }
        return replace(suite, axes=axes)

    def to_json(self) -> str:
        return FORMAT.text(self.record)


def read_lock(path: Path, protocol: str = GATE) -> CounterfactualLock | None:
    """The lock at ``path``; None when there is none; ``LockfileError`` when unreadable or
    written under another protocol."""
    record = FORMAT.read(path, protocol)
    return None if record is None else CounterfactualLock(path, record)


# -- load, or generate and write ----------------------------------------------------------------


class PromptLocks:
    """The suites' lock files as one process uses them: each read (or written) once; the
    LLM loaded only to write one."""

    def __init__(self, *, llm_model: str | None, load_llm: Callable[[], LanguageModel],
                 update: bool = False, max_new_tokens: int | None = None,
                 frozen: bool = False) -> None:
        self.llm_model = llm_model
        self.load_llm = load_llm
        self.update = update
        self.frozen = frozen
        """``--t2i-frozen-locks`` (or CI): a missing lock is an error, never written."""
        self.max_new_tokens = max_new_tokens
        """``--t2i-llm-tokens``: the LLM's reply budget; None: one prompt line's."""
        self._locks: dict[tuple[Path, str], CounterfactualLock] = {}

    def phrase(self, suite: Suite, subject: str, protocol: str = GATE) -> Suite:
        """``suite`` with its ``counterfactuals: llm`` axes phrased for ``subject`` from
        ``protocol``'s lock."""
        if not any(axis.counterfactuals_from_llm for axis in suite.axes.values()):
            return suite
        key = (suite.path, repr(requirements(suite)) + protocol)
        if key not in self._locks:
            self._locks[key] = locked_counterfactuals(suite, llm_model=self.llm_model,
                                                      load_llm=self.load_llm, update=self.update,
                                                      max_new_tokens=self.max_new_tokens,
                                                      frozen=self.frozen, protocol=protocol)
        return self._locks[key].apply(suite, subject)


def locked_counterfactuals(suite: Suite, *, llm_model: str | None,
                           load_llm: Callable[[], LanguageModel], update: bool = False,
                           max_new_tokens: int | None = None,
                           frozen: bool = False, protocol: str = GATE) -> CounterfactualLock:
    """The suite's lock under ``protocol``: read and checked, or (missing / ``update``)
    generated and written; ``frozen``: missing is an error (``frozen_refusal``), never written."""
    path = lock_path(suite.path, protocol=protocol)
    wanted = requirements(suite)
    if not update and (lock := read_lock(path, protocol)) is not None:
        return _checked(lock, suite, wanted, llm_model)
    if frozen and not update:
        axis = next(a for a in suite.axes.values() if a.counterfactuals_from_llm)
        raise frozen_refusal(path, f"counterfactual prompts for axis {axis.name!r}",
                             at=suite.path, line=axis.location.line if axis.location else 1)
    if not llm_model:
        raise _needs_llm(suite, path, update)
    with writing(path):
        if not update and (lock := read_lock(path, protocol)) is not None:
            return _checked(lock, suite, wanted, llm_model)  # another worker wrote it meanwhile
        lock = _generate(suite, path, wanted, llm_model, load_llm(), max_new_tokens, protocol)
        write_text(path, lock.to_json())
    log.warning("wrote counterfactual lock file %s: review and commit it", path)
    return lock


def _checked(lock: CounterfactualLock, suite: Suite, wanted: dict[str, Any],
             llm_model: str | None) -> CounterfactualLock:
    differences = lock.differences(wanted, llm_model)
    if differences:
        raise LockfileError(lock.path, 1, f"counterfactual lock file is stale for suite "
                                          f"{suite.path.name}: {'; '.join(differences)}. Rerun "
                                          f"with {UPDATE_OPTION} to regenerate it, then review "
                                          f"and commit the diff")
    return lock


def _needs_llm(suite: Suite, path: Path, update: bool) -> LockfileError:
    axis = next(a for a in suite.axes.values() if a.counterfactuals_from_llm)
    line = axis.location.line if axis.location else 1
    if update:
        message = (f"{UPDATE_OPTION} regenerates {path.name} with the language model, but "
                   f"--t2i-llm is not set (command line or ini key t2i_llm)")
    else:
        message = (f"axis {axis.name!r} has counterfactuals: llm, but its lock file {path.name} "
                   f"does not exist and --t2i-llm is not set to write it: run once with "
                   f"--t2i-llm=ID|PATH (or ini key t2i_llm), then commit {path.name}")
    return LockfileError(suite.path, line, message)


def _generate(suite: Suite, path: Path, wanted: dict[str, Any], llm_model: str,
              llm: LanguageModel, max_new_tokens: int | None = None,
              protocol: str = GATE) -> CounterfactualLock:
    from ..methods.counterfactuals import (
        MAX_NEW_TOKENS,
        generation_settings,
        suite_counterfactuals,
    )

    budget = max_new_tokens or MAX_NEW_TOKENS
    chosen = suite_counterfactuals(llm, suite, budget)
    weights = llm_weights(llm_model)  # after loading: a hub model now resolves to its commit
    record = FORMAT.new(protocol, **{
        "suite": suite.path.name,
        "llm": {
            "model": shown_model(llm_model, path.parent),
            "revision": weights.rpartition("@")[2] if weights.startswith("hub:") else None,
            "weights": weights,
            "fingerprint": getattr(llm, "fingerprint", None),
        },
        "settings": generation_settings(llm, budget),
        "prompt": wanted["prompt"],
        "subjects": wanted["subjects"],
        "axes": {
            axis: {
                "phrases": wanted["axes"][axis],
                "prompts": {subject: {value: _entry(choice) for value, choice in by_value.items()}
                            for subject, by_value in by_subject.items()},
            }
            for axis, by_subject in chosen.items()
        },
    })
    return CounterfactualLock(path, record)


# -- helpers ------------------------------------------------------------------------------------


def _entry(choice: Choice) -> dict[str, Any]:
    """One value's record: the prompt, every ranked candidate on one line (prompt -> mean
    token log-likelihood, best first), and why the others were left out (by source)."""
    return {
        "prompt": choice.prompt,
        "candidates": {c.prompt: round(float(c.mean_log_likelihood), 4)
                       for c in choice.candidates
                       if c.rejected is None and c.mean_log_likelihood is not None},
        "rejected": {c.source: f"{c.rejected}: {c.prompt!r}" if c.prompt else c.rejected
                     for c in choice.candidates if c.rejected is not None},
    }


def _uncovered(axis: str, locked_axis: dict[str, Any], subjects: list[str],
               phrases: dict[str, str]) -> list[str]:
    prompts = locked_axis["prompts"]
    return [f"axis {axis!r} has no prompt for subject {subject!r}, value {value!r}"
            for subject in subjects for value in phrases
            if not isinstance(prompts.get(subject, {}).get(value, {}).get("prompt"), str)]


def _shape_problem(record: dict[str, Any]) -> str | None:
    """What is missing from a parsed lock file of this version, or None when its shape is right."""
    expected = {"prompt": str, "subjects": list, "llm": dict, "axes": dict}
    for key, kind in expected.items():
        if not isinstance(record.get(key), kind):
            return f"{key!r} missing or not a {kind.__name__}"
    if not isinstance(record["llm"].get("weights"), str):
        return "'llm.weights' missing"
    for axis, body in record["axes"].items():
        if not (isinstance(body, dict) and isinstance(body.get("phrases"), dict)
                and isinstance(body.get("prompts"), dict)
                and all(isinstance(v, dict) and all(isinstance(e, dict) for e in v.values())
                        for v in body["prompts"].values())):
            return f"axis {axis!r} needs 'phrases' and 'prompts' (subject -> value -> {{prompt}})"
    return None


FORMAT = LockFormat("counterfactual", LOCK_VERSION, ABOUT, _shape_problem)
