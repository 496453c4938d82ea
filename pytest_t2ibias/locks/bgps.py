"""The BGPS lock file: the prompts a Bias-Guided Prompt Search found, frozen beside the suite.

``toy_bgps.t2i.yaml`` -> ``toy_bgps.t2i.bgps.lock.json``, one entry per gate (its check id, or
``axis=value`` from Python): the searching LLM's weights, the generator's fingerprint (weights,
scheduler, steps, guidance, dtype), the probe's metadata hash, the search settings, and every
prompt found with its Eq. 4 score, LM log-likelihood and probe probability; the λ = 0 baseline
the same way; the prompts' perplexity under the evaluation LM.

- entry present and matching (target, settings, LLM, generator, a given probe): the gate reruns
  from it: images and answers come from the cache, no LLM, probe or UNet forward for a search;
- entry missing: search (LLM + generator + probe trained once per generator under
  ``<cache>/probes``), write the file atomically under a file lock (xdist workers write once);
- stale: an error naming the file and what differs; ``--t2i-update-locks`` searches again.

Under ``protocol: paper`` (App. C's instruction, the paper's prompt lengths) the searches live
in their own ``x.t2i.bgps.paper.lock.json`` (``_file.lock_path``): a gate run never reads them,
nor a paper run the gate's.

Composition: the method (``methods.bgps``) receives the LM adapter, the probe scorer and the
instrument; this module decides where they come from.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendError, CheckError, LockfileError
from ..methods.bgps import (
    BGPSGateResult,
    BGPSResult,
    InstructionReading,
    SearchProgress,
    SearchSettings,
    bgps_gate,
    bgps_search,
    instruction_for,
    llm_baseline,
    measurement_seed,
    readable_instruction,
    settings_as_searched,
)
from ..methods.bgps.instructions import PROJECT_INSTRUCTION
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
    from .._settings import Settings
    from ..instrument import Instrument, Models
    from ..suite_spec import AxisSpec, Suite

LOCK_VERSION = 1
ABOUT = ("Prompts pytest-t2ibias' Bias-Guided Prompt Search found for the suite's "
         "BGPS gates. Commit this file: CI reruns the gates from it without "
         "searching. Regenerate with --t2i-update-locks and review the diff.")
INSTRUCTION = PROJECT_INSTRUCTION
"""The project's instruction to a chat LLM (``instruction: project``); App. C's is
``methods.bgps.paper_instruction``."""

log = logging.getLogger("pytest_t2ibias.bgps")


def bgps_lock_path(suite_path: Path, protocol: str = GATE) -> Path:
    """``x.t2i.yaml`` -> ``x.t2i.bgps.lock.json`` (``.bgps.paper.lock.json`` under
    ``protocol: paper``), in the suite's folder."""
    return lock_path(suite_path, "bgps", protocol)


@dataclass(frozen=True)
class BGPSGate:
    """One gate's search, as a check entry or ``t2ibias.bgps`` asks for it."""

    key: str
    axis: AxisSpec
    target: str
    settings: SearchSettings
    baseline: bool = True
    neutral_prompt: str = "a photo of a person"
    step_index: int = 5
    latents: int = 10
    probe: str | None = None
    """A saved probe directory; None: trained once per generator under the cache dir."""
    curated_prompts: tuple[str, ...] = ()
    """Measured beside the found prompts (not searched: not part of the lock's identity)."""
    instruction: str = "project"
    """``project``, ``paper``, ``paper_biased`` or an instruction's text
    (``methods.bgps.instruction_for``)."""
    scenario: str = "occupation"
    lambda_sweep: tuple[float, ...] = ()
    """Further λ values searched for the report's sweep (App. D)."""

    def identity(self) -> dict[str, Any]:
        """What decides the prompts found, besides the LLM and the generator. The instruction,
        scenario and sweep join it only when set, so locks written before them still match."""
        extra: dict[str, Any] = {}
        if self.instruction != "project":
            extra["instruction"] = {"choice": self.instruction, "scenario": self.scenario}
        if self.lambda_sweep:
            extra["lambda_sweep"] = list(self.lambda_sweep)
        return {"target": {"axis": self.axis.name, "value": self.target},
                "settings": json.loads(json.dumps(asdict(self.settings))),
                "with_baseline": self.baseline, "neutral_prompt": self.neutral_prompt,
                "step_index": self.step_index, "latents": self.latents, **extra}


class BGPSLocks:
    """The suites' BGPS lock files as one process uses them; the LLM, the generator's UNet
    and the probe are loaded only to search."""

    def __init__(self, settings: Settings, models: Models, *, update: bool = False) -> None:
        self.settings = settings
        self.models = models
        self.update = update
        self.searches = 0
        """Searches this process ran (0 on a warm run)."""
        self._searched: dict[tuple[str, str], dict[str, Any]] = {}
        """Entries this process searched, by (lock file, gate): a gate judged again (each
        look of an adaptive check, each level of a family) reads its own search even under
        ``--t2i-update-locks``, which would otherwise search once more every time."""
        self._readings: dict[str, InstructionReading | None] = {}
        """What the searching LLM could read of each gate's instruction (``search_tools``)."""

    def run(self, instrument: Instrument, suite: Suite, gate: BGPSGate, *, confidence: float,
            progress: Callable[[str], None] | None = None, calibration: Any = None,
            judge_correction: str = "off", protocol: str = GATE) -> BGPSGateResult:
        """The gate's measured prompts: from ``protocol``'s lock when it matches, else searched
        and locked; measured through the judge's ``calibration``
        (``methods.bgps.measure_prompts``)."""
        path = bgps_lock_path(suite.path, protocol)
        wanted = self._wanted(instrument, gate)
        entry = self._searched.get((str(path), gate.key))
        searched = entry is not None  # by this process, earlier
        if entry is None and not self.update:
            entry = self._matching(path, suite, gate, wanted, protocol)
        if entry is None and getattr(self.settings, "frozen_locks", False) and not self.update:
            raise frozen_refusal(path, f"BGPS search for gate {gate.key!r}", at=suite.path)
        note_used(path, gate.key)
        if entry is None:
            searched = True
            with writing(path):
                entry = None if self.update else self._matching(path, suite, gate, wanted, protocol)
                if entry is None:
                    entry = self._search(instrument, suite, gate, wanted, progress, path)
                    record = FORMAT.read(path, protocol) or FORMAT.new(
                        protocol, suite=suite.path.name, gates={})
                    record["gates"][gate.key] = entry
                    FORMAT.write(path, record)
                    log.warning("wrote BGPS lock file %s: review and commit it", path)
                    self._searched[(str(path), gate.key)] = entry
                else:
                    searched = False
        found = BGPSResult.from_dict(entry["search"])
        baseline = BGPSResult.from_dict(entry["baseline"]) if entry.get("baseline") else None
        sweep = [BGPSResult.from_dict(r) for r in entry.get("sweep") or ()]
        # Each search seed measures on images of its own (the suite's seed for search seed 0).
        plan = getattr(instrument, "plan", None)
        seed = measurement_seed(plan.seed, gate.settings.seed) if plan is not None else None
        measuring = instrument if plan is None or seed == plan.seed else instrument.with_plan(
            replace(plan, seed=seed))
        result = bgps_gate(measuring, gate.axis, gate.target, found, baseline=baseline,
                           neutral_prompt=gate.neutral_prompt, curated_prompts=gate.curated_prompts,
                           filter=suite.filter,
                           perplexity=self._perplexity(entry), confidence=confidence,
                           searched=searched, source="search" if searched else str(path),
                           calibration=calibration, judge_correction=judge_correction, sweep=sweep)
        reading = entry.get("instruction_reading")
        return replace(result, image_seed=seed, probe_step=gate.step_index,
                       schedule_steps=_schedule_steps(instrument),
                       instruction=str(entry.get("instruction_text", "")),
                       instruction_note=InstructionReading.from_dict(reading).note()
                       if isinstance(reading, dict) else "")

    # -- the lock ---------------------------------------------------------------------------

    def _wanted(self, instrument: Instrument, gate: BGPSGate) -> dict[str, Any]:
        return {**gate.identity(),
                "llm": llm_weights(self.settings.llm) if self.settings.llm else None,
                "generator": instrument.generator().fingerprint,
                "probe_given": _probe_hash(Path(gate.probe)) if gate.probe else None}

    def _matching(self, path: Path, suite: Suite, gate: BGPSGate,
                  wanted: dict[str, Any], protocol: str = GATE) -> dict[str, Any] | None:
        record = FORMAT.read(path, protocol)
        entry: dict[str, Any] | None = (record or {}).get("gates", {}).get(gate.key)
        if entry is None:
            return None
        differences = _differences(entry, wanted, self.settings.llm)
        if differences:
            raise LockfileError(path, 1, f"BGPS lock entry {gate.key!r} is stale for suite "
                                         f"{suite.path.name}: {'; '.join(differences)}. Rerun with "
                                         f"{UPDATE_OPTION} to search again, then review and commit "
                                         f"the diff")
        return entry

    # -- searching ---------------------------------------------------------------------------

    def _search(self, instrument: Instrument, suite: Suite, gate: BGPSGate, wanted: dict[str, Any],
                progress: Callable[[str], None] | None, path: Path) -> dict[str, Any]:
        if not self.settings.llm:
            raise LockfileError(suite.path, 1, f"gate {gate.key!r} has no entry in "
                                               f"{path.name} and --t2i-llm is "
                                               f"not set to search: run once with --t2i-llm, then "
                                               f"commit the lock file")
        self.searches += 1
        try:
            lm, scorer, probe = self.search_tools(instrument, suite, gate)
            say = _progress_line(gate.key, progress)
            found = bgps_search(lm, scorer, gate.settings, progress=say)
            baseline = llm_baseline(lm, gate.settings, scorer, progress=say) if gate.baseline else None
            sweep = [bgps_search(lm, scorer, replace(gate.settings, lam=lam), progress=say)
                     for lam in gate.lambda_sweep]
        except CheckError:
            raise
        except Exception as error:  # a model's internals: one paragraph, an ERROR, not a FAILED
            raise BackendError(
                f"BGPS could not search gate {gate.key!r} on {_pipeline_name(instrument)} with "
                f"--t2i-llm={self.settings.llm}: {type(error).__name__}: {error}. The h-space "
                "read-out supports diffusers pipelines with a UNet mid-block (SD 1.x/2.x, SDXL) "
                "or a transformer block stack (SD3, Flux, PixArt); commit a lock file searched "
                "elsewhere, or drop the check.", original=error) from error
        reading = self._readings.pop(gate.key, None)
        if not found.prompts:  # nothing to judge and nothing worth freezing in the lock file
            s = gate.settings
            unread = f" ({reading.note()})" if reading is not None and reading.note() else ""
            raise CheckError(
                f"BGPS found no prompt for gate {gate.key!r} with --t2i-llm={self.settings.llm}: "
                f"{s.prompts} search(es) of {s.max_new_tokens} new token(s) ended with no "
                f"candidate left ({found.dropped_naming} dropped for naming a value of the "
                f"axis, {found.candidates_scored} scored). Search wider (prompts, beam, "
                f"expansion, max_new_tokens), or use an LLM that continues "
                f"{s.model_prompt!r} in words of its own{unread}.")
        texts = [p.prompt for p in found.prompts] + ([p.prompt for p in baseline.prompts]
                                                     if baseline else [])
        entry = {
            **wanted,
            "llm": wanted["llm"],
            "llm_model": shown_model(self.settings.llm, suite.path.parent),
            "probe": probe,
            "search": found.to_dict(),
            "baseline": baseline.to_dict() if baseline else None,
            "instruction_text": getattr(lm, "instruction", ""),
        }
        if reading is not None:  # not part of the key: the same gate, read by another LLM
            entry["instruction_reading"] = reading.to_dict()
        if sweep:
            entry["sweep"] = [r.to_dict() for r in sweep]
            texts += [p.prompt for r in sweep for p in r.prompts]
        if self.settings.eval_llm and texts:
            entry["perplexity"] = {"eval_llm": llm_weights(self.settings.eval_llm),
                                   "values": self._perplexities(texts + [gate.neutral_prompt])}
        return entry

    def search_tools(self, instrument: Instrument, suite: Suite, gate: BGPSGate
                     ) -> tuple[Any, Any, dict[str, Any]]:
        """The LM adapter, the probe scorer and the probe's metadata for the lock: the
        generator loaded, its h-space probe trained once (or the given one checked), the LLM."""
        from ..backends.hspace import HSpaceReader
        from ..backends.probe import (
            HSpaceProbeScorer,
            LinearProbe,
            ProbeTraining,
            load_or_train_probe,
        )
        from ..backends.token_lm import BeamSearchLM

        generator = instrument.generator()
        loaded = generator.loaded() if hasattr(generator, "loaded") else generator
        reader = HSpaceReader.from_generator(loaded)
        if gate.probe:
            probe = LinearProbe.load(gate.probe, reader, gate.step_index)
        else:
            probe = load_or_train_probe(
                self.settings.cache_dir, reader, gate.axis.name, list(gate.axis.choices),
                step_indices=[gate.step_index], subjects=list(suite.subjects),
                phrases={v: gate.axis.phrase(v) for v in gate.axis.choices},
                training=ProbeTraining(images_per_prompt=12))
        scorer = HSpaceProbeScorer(reader, probe, gate.target, step_index=gate.step_index,
                                   latents=gate.latents, neutral_prompt=gate.neutral_prompt)
        llm = self.models.llm
        chat = bool(getattr(getattr(llm, "tokenizer", None), "chat_template", None))
        instruction = instruction_for(gate.instruction, gate.axis.name, gate.target,
                                      scenario=gate.scenario, chat=chat)
        reading = instruction_reading(llm, instruction, gate.instruction) if instruction else None
        self._readings[gate.key] = reading
        if reading is not None and reading.note():
            log.warning("BGPS gate %s: %s", gate.key, reading.note())
        lm = BeamSearchLM(llm, instruction=readable_instruction(instruction, reading),
                          max_new_tokens=gate.settings.max_new_tokens)
        about = {"directory": probe.path.name if probe.path else None,  # under <cache>/probes
                 "metadata_sha256": _probe_hash(Path(probe.path)) if probe.path else None,
                 "held_out_accuracy": probe.held_out_accuracy.get(gate.step_index)}
        return lm, scorer, about

    def _perplexities(self, texts: list[str]) -> dict[str, float]:
        values = self.models.eval_llm.perplexity(list(dict.fromkeys(texts)))
        return {t: round(float(v), 4) for t, v in zip(dict.fromkeys(texts), values)}

    def _perplexity(self, entry: dict[str, Any]) -> Callable[[list[str]], list[float]] | None:
        """Perplexity under ``--t2i-eval-llm``: from the lock when the same LM wrote it."""
        if not self.settings.eval_llm:
            return None
        stored = entry.get("perplexity") or {}
        known = stored.get("values", {}) if stored.get("eval_llm") == llm_weights(
            self.settings.eval_llm) else {}

        def perplexity(texts: list[str]) -> list[float]:
            missing = [t for t in texts if t not in known]
            fresh = self._perplexities(missing) if missing else {}
            return [known[t] if t in known else fresh[t] for t in texts]

        return perplexity


# -- helpers ------------------------------------------------------------------------------------


def instruction_reading(llm: Any, text: str, choice: str) -> InstructionReading:
    """What ``llm`` can read of ``text``: the words its tokenizer maps to the unknown token
    (none for byte-level BPE: GPT-2's, Llama's), and its perplexity on the text when the LLM
    scores texts and the text fits its context."""
    from ..backends.vocabulary import distinct_words, unread_words

    tokenizer = llm.tokenizer
    perplexity = None
    context = getattr(llm, "context_length", None)
    if hasattr(llm, "perplexity") and hasattr(llm, "encode") and (
            not isinstance(context, int) or len(llm.encode(text, verbose=False)) <= context):
        perplexity = round(float(llm.perplexity([text])[0]), 1)  # a stable lock diff
    return InstructionReading(choice=choice, words=len(distinct_words(text)),
                              unread=tuple(unread_words(tokenizer, text)), perplexity=perplexity,
                              vocabulary=len(tokenizer))


def _pipeline_name(instrument: Instrument) -> str:
    """The generator's pipeline class (when loaded), for a message."""
    generator = instrument.generator()
    loaded = getattr(generator, "_configured", None)
    pipeline = getattr(getattr(loaded, "_value", None), "pipeline", None)
    return type(pipeline).__name__ if pipeline is not None else f"the generator {generator!r}"


def _schedule_steps(instrument: Instrument) -> int | None:
    """The denoising steps the generator samples with (the plan's, else its own default)."""
    steps = getattr(getattr(instrument, "plan", None), "steps", None)
    if steps:
        return int(steps)
    if not hasattr(instrument, "generator"):
        return None
    generator = instrument.generator()
    steps = getattr(generator, "steps", None)
    return int(steps) if isinstance(steps, int) else None


def _progress_line(key: str, progress: Callable[[str], None] | None
                   ) -> Callable[[SearchProgress], None] | None:
    if progress is None:
        return None

    def say(step: SearchProgress) -> None:
        progress(f"bgps {key}: search {step.run + 1}/{step.runs} step {step.step + 1}: best "
                 f"{step.best_score:.2f} {step.best_prompt!r} ({step.live} live, "
                 f"{step.finished} finished, {step.prompts_found} found)")

    return say


def _differences(entry: dict[str, Any], wanted: dict[str, Any], llm_model: str | None) -> list[str]:
    names = {"target": "the target", "settings": "the search settings", "with_baseline": "with_baseline",
             "neutral_prompt": "the neutral prompt", "step_index": "the probe step",
             "latents": "the latents",
             "generator": "the generator (weights, scheduler, steps, guidance or dtype)",
             "probe_given": "the probe file", "instruction": "the LLM instruction",
             "lambda_sweep": "the λ sweep"}
    found = []
    for key, label in names.items():
        ours, theirs = wanted.get(key), entry.get(key)
        if key == "settings" and isinstance(theirs, dict):
            theirs = settings_as_searched(theirs)
        if ours == theirs:
            continue
        if isinstance(ours, dict) and isinstance(theirs, dict):
            changed = sorted(k for k in {*ours, *theirs} if ours.get(k) != theirs.get(k))
            found.append(f"{label} changed ({', '.join(f'{k}: lock {theirs.get(k)!r}, now {ours.get(k)!r}' for k in changed)})")
        else:
            found.append(f"{label} changed (lock {_short(theirs)}, now {_short(ours)})")
    other_llm = llm_changed(llm_model, entry.get("llm"), entry.get("llm_model"))
    return found + ([other_llm] if other_llm else [])


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _probe_hash(directory: Path) -> str:
    from ..backends.probe import METADATA_FILE

    path = directory / METADATA_FILE
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise LockfileError(directory, 1, f"cannot read the probe's {METADATA_FILE}: {exc}") from None


def _shape_problem(record: dict[str, Any]) -> str | None:
    return None if isinstance(record.get("gates"), dict) else "'gates' missing or not an object"


FORMAT = LockFormat("BGPS", LOCK_VERSION, ABOUT, _shape_problem)

