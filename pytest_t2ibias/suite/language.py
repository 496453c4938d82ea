"""The suite language, declared once: every key of a ``*.t2i.yaml`` suite, section by section.

Each ``Key`` says what the key means, its type in words, an example, its default in words,
whether it is required, and what its value may be: a ``Value`` (a scalar's rule: the loader
checks it and reports ``must be <words>``, the schema says the same keywords), or, for a
structured value (a filter, an axis, a model entry), its JSON Schema, whose cross-references
(choices, axes, paths) the loader's section readers check. The loader's key lists
(unknown and missing keys), the suite's JSON Schema (``suite.schema.json_schema``) and the
YAML reference (``docgen/reference.py``) are all read off these sections; a check kind's own
parameters are declared the same way on its ``Params`` (``pytest_t2ibias.params``).

Every example is a fragment of a suite from its top level, so that a test can merge it into a
base suite and hand it to both the loader and the schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._settings import BURDENS, JUDGE_CORRECTIONS, PROTOCOLS
from ..budgets import MAX_IMAGE_SIDE, MAX_IMAGES_PER_PROMPT
from ..params import ADAPTIVE_SCHEMA, IMAGES_SCHEMA, TEXT_SCHEMA, check_images
from ..plan import DEFAULT_IMAGES_PER_PROMPT, DEFAULT_SEED

NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
"""Axis names and check ids: they become parts of pytest item names."""
MARKER_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
"""A check's ``marks:``: pytest marker names (pytest refuses those starting with ``_``:
``__class__`` would reach ``MarkGenerator`` as an attribute lookup)."""
LLM_COUNTERFACTUALS = "llm"
"""``counterfactuals: llm``: the language model phrases them (``methods.counterfactuals``)."""
MAX_CHOICES = 64
"""Most choices an axis may have (every answer set is images x choices)."""

TEXT = TEXT_SCHEMA
"""A non-empty string (the loader's ``text``: not blank)."""
NAMES = {"type": "array", "items": TEXT, "minItems": 1, "uniqueItems": True}
"""A list of unique non-empty strings (subjects, choices, names)."""
CHOICE_TEXTS = {"type": "object", "additionalProperties": TEXT}
"""A mapping choice -> text (which keys are choices, the loader checks)."""
TEMPLATE = {"type": "string",
            "pattern": r"^(?:[^{}]|\{\{|\}\})*\{subject\}(?:[^{}]|\{\{|\}\}|\{subject\})*$"}
"""A prompt template: ``{subject}`` at least once, bare, and no other placeholder (``{{`` and
``}}`` are literal braces), as the loader's ``template`` demands."""


@dataclass(frozen=True)
class Value:
    """A scalar's rule: an integer or a number within bounds, one of some words, or images a
    prompt (an integer or ``{max: N}``). The loader reports ``must be <words>``; the schema
    says the same with keywords."""

    type: str
    """``text``, ``integer``, ``number``, ``boolean``, ``enum`` or ``images``."""
    minimum: float | None = None
    maximum: float | None = None
    below: float | None = None
    """An exclusive maximum."""
    choices: tuple[str, ...] = ()
    unit: str = ""
    """Said after the bounds (``(pixels)``)."""

    def words(self) -> str:
        """What the value must be, as the loader's message says it."""
        if self.type == "enum":
            return "one of " + ", ".join(self.choices)
        if self.type == "images":
            return "a positive integer or {max: N}"
        if self.type == "boolean":
            return "true or false"
        if self.type == "text":
            return "a non-empty string"
        noun = "an integer" if self.type == "integer" else "a number"
        if self.type == "integer" and self.minimum == 1 and self.maximum is None:
            words = "a positive integer"
        elif self.minimum is not None and self.maximum is not None:
            words = f"{noun} in [{self.minimum:,g}, {self.maximum:,}]"
        elif self.minimum is not None and self.below is not None:
            words = f"{noun} in [{self.minimum:g}, {self.below:g})"
        elif self.minimum is not None:
            words = f"{noun} >= {self.minimum:g}"
        else:
            words = noun
        return f"{words} {self.unit}".rstrip()

    def problem(self, value: Any) -> str | None:
        """None when ``value`` is allowed, else what it must be (``must be ...``)."""
        if self.type == "enum":
            return None if value in self.choices else f"must be {self.words()}"
        if self.type == "boolean":
            return None if isinstance(value, bool) else f"must be {self.words()}"
        if self.type == "text":
            return None if isinstance(value, str) and value.strip() else f"must be {self.words()}"
        if self.type == "images":
            if isinstance(value, dict):
                return check_images(value)
            if _is_int(value) and value > MAX_IMAGES_PER_PROMPT:
                return f"must be at most {MAX_IMAGES_PER_PROMPT:,}"
        typed = _is_int(value) if self.type in ("integer", "images") else _is_number(value)
        low = 1 if self.type == "images" else self.minimum
        within = typed and (low is None or value >= low) and (
            self.maximum is None or value <= self.maximum) and (
            self.below is None or value < self.below)
        return None if within else f"must be {self.words()}"

    def read(self, value: Any) -> Any:
        """The value as the suite keeps it: a number as a float, ``{max: N}`` as a dict."""
        if self.type == "number":
            return float(value)
        return dict(value) if isinstance(value, dict) else value

    def schema(self) -> dict[str, Any]:
        if self.type == "enum":
            return {"enum": list(self.choices)}
        if self.type == "images":
            return {"anyOf": [IMAGES_SCHEMA, ADAPTIVE_SCHEMA]}
        if self.type == "boolean":
            return {"type": "boolean"}
        if self.type == "text":
            return dict(TEXT)
        schema: dict[str, Any] = {"type": self.type}
        for keyword, bound in (("minimum", self.minimum), ("maximum", self.maximum),
                               ("exclusiveMaximum", self.below)):
            if bound is not None:
                schema[keyword] = bound
        return schema


@dataclass(frozen=True)
class Key:
    """One key of a suite section."""

    type: str
    """The value's type in words (the reference's Type column)."""
    meaning: str
    """One paragraph of markdown: what the key does and why one would set it."""
    example: str
    """YAML from the suite's top level showing the key in use."""
    schema: dict[str, Any] = field(default_factory=dict)
    """JSON Schema of a structured value (the rest of a section's, filter's, axis' ... schema
    is filled in by ``suite.schema`` from its own section); with a ``value``, only what its
    rule does not say (a ``default``)."""
    default: str = ""
    """The default in words; empty: no default (required, or absent means off)."""
    required: bool = False
    required_words: str = ""
    """When the key is required, in words, where a flag cannot say it (``none``: with
    ``parts``; an axis' ``question``: unless ``parts``)."""
    value: Value | None = None
    """A scalar's rule, checked by the loader's ``scalar`` and put into the schema."""

    def json_schema(self) -> dict[str, Any]:
        return {**(self.value.schema() if self.value else {}), **self.schema,
                "description": self.meaning}


@dataclass(frozen=True)
class Section:
    """The keys of one mapping of a suite, in the order the loader reads and the reference
    lists them."""

    where: str
    """Where the keys sit, as the loader's messages say it (``in defaults``)."""
    keys: Mapping[str, Key]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.keys)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(name for name, key in self.keys.items() if key.required)


# -- the top of a suite -----------------------------------------------------------------------

TOP = Section('at the top of the suite', {
    "suite": Key(
        "string", "The suite's name in item ids, reports and lock files.",
        "suite: occupations", value=Value("text"),
        default="the file name without `.t2i.yaml`"),
    "defaults": Key(
        "mapping ([keys](#keys-of-defaults))",
        "How every check of the suite samples unless a check or the command line says "
        "otherwise (`--t2i-images-per-prompt`, `--t2i-seed`, `--t2i-steps`, `--t2i-guidance`, "
        "`--t2i-height`, `--t2i-width` "
        "win).",
        "defaults: {images_per_prompt: 48, seed: 0, steps: 20, guidance: 2.0}",
        default="none: see each key"),
    "prompt": Key(
        "string with `{subject}`", "The prompt template every subject is put into. It must "
        "contain the placeholder `{subject}`, bare (no format spec, conversion, attribute or "
        "index) and no other one; write `{{` and `}}` for literal braces.",
        'prompt: "a photo of a {subject}"', TEMPLATE, required=True),
    "subjects": Key(
        "list of strings", "What goes into `{subject}`: each check judges each subject (one "
        "pytest item per subject, and per axis for kinds with axes). Unique; quote numbers.",
        "subjects: [doctor, nurse, musician]", NAMES, required=True),
    "filter": Key(
        "mapping ([keys](#keys-of-filter))",
        "A question every image must pass before any axis is read (\"is there a person?\"). "
        "Images whose answer is not `keep` are excluded from every distribution and counted "
        "as filtered: the filtered share is reported, because erasure is a finding.",
        'filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}',
        default="no filter: every image counts"),
    "axes": Key(
        "mapping name → axis ([keys](#keys-of-axes))",
        "The attributes the checks measure (gender, age, environment ...), each read off "
        "every image by the VQA model (or an attribute classifier) as one of its choices. "
        "Names are letters, digits, `_`, `.` and `-`.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]",
        {"type": "object", "minProperties": 1,
         "propertyNames": {"pattern": NAME_PATTERN.pattern}}, required=True),
    "checks": Key(
        "list of checks ([keys](#keys-of-checks), [kinds](#check-kinds))",
        "The gates: each entry names a check kind and its parameters and becomes one pytest "
        "item per subject (and per axis for kinds with axes), e.g. "
        "`occupations.t2i.yaml::severity[doctor-gender]`.",
        "checks:\n"
        "  - {id: severity, kind: entropy_below, axes: [gender], threshold: 0.5}",
        {"type": "array"},
        default="none: the suite collects no items"),
    "models": Key(
        "mapping ([keys](#keys-of-models))",
        "The generators this suite runs, by role. Paths are relative to the suite file; "
        "anything that does not look like a path is taken for a hub id. The command line "
        "(`--t2i-model`, `--t2i-baseline-model`) beats the suite, which beats the ini file.",
        "models: {baseline: stabilityai/stable-diffusion-2-1, candidate: my-org/sd-2-1-debiased}",
        default="`--t2i-model` / `--t2i-baseline-model` (or their ini keys)"),
    "confidence": Key(
        "number in [0.5, 1)", "The level every check of the suite gates at unless it sets "
        "its own `confidence:`: its interval decides (wholly within the limit passes, wholly "
        "beyond fails, across it is *inconclusive*, see `burden`). Without it, and without a "
        "check's own, a check compares its point value with its limit, which at a few images "
        "a prompt passes figures whose interval reaches far past the limit; a run in which no "
        "check gates on an interval says so in its summary and its JSON (`warnings`).",
        "confidence: 0.95", value=Value("number", minimum=0.5, below=1),
        default="none: each check's own, else a point decision"),
    "burden": Key(
        " or ".join(f"`{burden}`" for burden in BURDENS), "Who must prove its case when a check's interval straddles its "
        "limit (the verdict is *inconclusive*). `model`: the model must show it is within the "
        "limit, so inconclusive fails (release gates); `check`: only proof of bias fails "
        "(detection suites). A check's own `burden:` beats it and `--t2i-burden` beats both.",
        "burden: check", value=Value("enum", choices=BURDENS),
        default="`model`"),
    "protocol": Key(
        " or ".join(f"`{protocol}`" for protocol in PROTOCOLS), "What every check of the suite "
        "computes. `gate`: the project's figures (the judge's confusion corrected, a release "
        "gate's statistics, adaptive sampling where asked); `paper`: each kind's paper's own "
        "figure as the paper computed it (the judge's answers as read, at a fixed n, and "
        "what else the kind's paper sets: docs/paper-departures.md), still with an interval "
        "and still gated. Every row says which protocol produced it. A check's own "
        "`protocol:` beats it and `--t2i-protocol` beats both.",
        "protocol: paper", value=Value("enum", choices=PROTOCOLS),
        default="`gate`"),
    "judge_correction": Key(
        "`on`, `full` or `off`", "How every share is corrected for the judge's measured "
        "confusion (each axis' `judge_calibration`; docs/STATISTICS.md, \"The judge's own "
        "error\"). `on`: a labelled folder's calibration fully, counterfactual images' as "
        "bounds between judge error and the generator's non-adherence to explicit prompts; "
        "`full`: counterfactual calibrations fully too; `off`: the judge's labels taken as "
        "truth. An axis the calibration shows the judge cannot read decides nothing "
        "(inconclusive, never a pass). A check's own `judge_correction:` beats it and "
        "`--t2i-judge-correction` beats both.",
        "judge_correction: full", value=Value("enum", choices=JUDGE_CORRECTIONS),
        default="`on`"),
})

# -- ``defaults:`` ----------------------------------------------------------------------------

DEFAULTS = Section('in defaults', {
    "images_per_prompt": Key(
        "integer in [1, 100000], or `{max: N}` (adaptive)", "Images generated per prompt (per "
        "counterfactual prompt too). More images, tighter intervals: `--t2i-plan` says how "
        "many a threshold needs. `{max: N}`: every gated check of a kind that can stop early "
        "draws in rounds of 16, 32, 64 ... up to N and stops once decided (a check's "
        "`images_per_prompt: {max: N}`, docs/STATISTICS.md); the others, and a check that "
        "sets its own `images_per_prompt`, draw N (their own).",
        "defaults: {images_per_prompt: 48}",
        value=Value("images"), default=f"{DEFAULT_IMAGES_PER_PROMPT}"),
    "seed": Key(
        "integer ≥ 0", "Base seed: image *i* of every prompt is drawn from noise seeded by "
        "(seed, *i*), so counterfactual prompts and a baseline and a candidate model share "
        "their noise (paired comparisons).",
        "defaults: {seed: 0}", value=Value("integer", minimum=0), default=f"{DEFAULT_SEED}"),
    "steps": Key(
        "integer ≥ 1", "Denoising steps; part of every image's cache key.",
        "defaults: {steps: 20}", value=Value("integer", minimum=1),
        default="the model's declared sampling (`t2ibias.json`), else the pipeline's own "
                "(its `__call__` default: SD 1.x 50, SDXL 50, SD3 28, Flux 28, PixArt 20)"),
    "guidance": Key(
        "number ≥ 0", "Classifier-free guidance scale (Flux: the distilled guidance its "
        "transformer takes); part of every image's cache key.",
        "defaults: {guidance: 2.0}", value=Value("number", minimum=0),
        default="the model's declared sampling (`t2ibias.json`), else the pipeline's own "
                "(SD 1.x 7.5, SDXL 5.0, SD3 7.0, Flux 3.5, PixArt 4.5)"),
    "height": Key(
        f"integer in [8, {MAX_IMAGE_SIDE:,}]", "Image height in pixels; part of every image's "
        "cache key. The run header says which size was used and where it came from.",
        "defaults: {height: 512, width: 512}",
        value=Value("integer", minimum=8, maximum=MAX_IMAGE_SIDE, unit="(pixels)"),
        default="`--t2i-height`, else the model's declared sampling, else the pipeline's own "
                "(its default sample size x the VAE's scale: Flux 1024)"),
    "width": Key(
        f"integer in [8, {MAX_IMAGE_SIDE:,}]", "Image width in pixels; part of every image's "
        "cache key.",
        "defaults: {width: 512}",
        value=Value("integer", minimum=8, maximum=MAX_IMAGE_SIDE, unit="(pixels)"),
        default="`--t2i-width`, else the model's declared sampling, else the pipeline's own"),
    "batch_size": Key(
        "integer ≥ 1", "Accepted and validated, but not used at present: the images per "
        "generator call are set for the whole run by `--t2i-batch-size` (default 8).",
        "defaults: {batch_size: 8}", value=Value("integer", minimum=1),
        default="`--t2i-batch-size`"),
})

# -- ``filter:`` ------------------------------------------------------------------------------

FILTER = Section('in filter', {
    "question": Key(
        "string", "The question asked of every image.",
        'filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}',
        value=Value("text"), required=True),
    "choices": Key(
        "list of strings (≥ 2)", "The answers the VQA model chooses between (it always "
        "answers one of them). YAML 1.2 booleans apply: `yes` and `no` stay strings.",
        'filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}',
        {**NAMES, "minItems": 2}, required=True),
    "keep": Key(
        "string, one of `choices`", "The answer an image must get to count.",
        'filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}',
        value=Value("text"), required=True),
    "statements": Key(
        "mapping choice → string (every choice)", "For a CLIP-style (contrastive) VQA model: "
        "the caption each answer is compared as, instead of the question. Generative VQA "
        "models ignore it.",
        "filter:\n"
        '  question: "Is there a person in the image?"\n'
        "  choices: [yes, no]\n"
        "  keep: yes\n"
        '  statements: {yes: "a photo of a person", no: "a photo of an object"}',
        CHOICE_TEXTS, default="the question and the choice"),
})

# -- an axis ----------------------------------------------------------------------------------

AXIS = Section('in an axis', {
    "question": Key(
        "string", "The question asked of every image for this axis. Required unless the "
        "axis has `parts`.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]",
        value=Value("text"), default="with `parts`: the parts' questions", required=True,
        required_words="unless `parts`"),
    "choices": Key(
        "list of 2 to 64 strings", "The values the axis takes; every image gets one of them "
        "(or is filtered, or abstains). Required unless the axis has `parts`, where the "
        "choices are the part values then `none`.",
        "axes:\n"
        "  age:\n"
        '    question: "What is the age (young, middle-aged, old) of the person?"\n'
        "    choices: [young, middle-aged, old]",
        {**NAMES, "minItems": 2, "maxItems": MAX_CHOICES},
        default="with `parts`: the part values, then `none`", required=True,
        required_words="unless `parts`"),
    "counterfactuals": Key(
        f"mapping choice → prompt template, or `{LLM_COUNTERFACTUALS}`", "One prompt per "
        "value naming it explicitly, for the kinds that simulate mitigating the axis "
        "(`is_nonnegative`, `intermit`): BiasConnect pools them to ask what balancing this "
        "axis does to the others. Templates follow the rules of `prompt`. "
        f"`{LLM_COUNTERFACTUALS}`: the `--t2i-llm` model phrases them once and they are frozen "
        "in `<suite>.t2i.lock.json` beside the suite (commit it; `--t2i-update-locks` "
        "regenerates it).",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]\n"
        '    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a '
        'female {subject}"}',
        {"anyOf": [{"const": LLM_COUNTERFACTUALS},
                   {"type": "object", "additionalProperties": TEMPLATE}]},
        default="none (checks that need them say so)"),
    "ideal": Key(
        "`uniform`, mapping choice → share, or `{reference: PATH}`", "The distribution the "
        "axis should have. `uniform`; shares per choice in [0, 1] summing to 1 (choices left "
        "out get 0); or `{reference: PATH}`: measured by the same VQA on a folder of real "
        "images, relative to the suite file (BiasConnect A.10).",
        "axes:\n"
        "  age:\n"
        '    question: "What is the age (young, middle-aged, old) of the person?"\n'
        "    choices: [young, middle-aged, old]\n"
        "    ideal: {young: 0.3, middle-aged: 0.4, old: 0.3}",
        {"anyOf": [
            {"const": "uniform"},
            {"type": "object", "properties": {"reference": TEXT}, "required": ["reference"],
             "additionalProperties": False},
            {"type": "object", "not": {"required": ["reference"]},
             "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}},
        ], "default": "uniform"},
        default="`uniform`"),
    "ordered": Key(
        "true or false", "Whether the choices are in order (age: young < middle-aged < old). "
        "Ordered axes measure Wasserstein-1 with positional cost; unordered ones (the "
        "default, for nominal axes such as ethnicity) with cost 0/1, i.e. total variation.",
        "axes:\n"
        "  age:\n"
        '    question: "What is the age (young, middle-aged, old) of the person?"\n'
        "    choices: [young, middle-aged, old]\n"
        "    ordered: true",
        {"default": False}, default="`false`", value=Value("boolean")),
    "statements": Key(
        "mapping choice → string (every choice)", "For a CLIP-style VQA model: the caption "
        "each value is compared as. Generative VQA models ask the question instead.",
        "axes:\n"
        "  environment:\n"
        '    question: "Is the person indoors or outdoors?"\n'
        "    choices: [indoors, outdoors]\n"
        '    statements: {indoors: "a photo of a person working indoors", outdoors: "a photo '
        'of a person working outdoors"}',
        CHOICE_TEXTS, default="the question and the choice"),
    "classifier": Key(
        "true or false", "Require an attribute classifier for this axis. Whatever this "
        "key says, an axis with a classifier configured for it (`--t2i-classifier=AXIS=MODEL` "
        "or the ini's `t2i_classifier`) is read by that classifier, not the VQA model, and "
        "its question is not asked; `true` makes the classifier required: when none is "
        "given for the axis its checks fail saying so, rather than falling back to the VQA "
        "model in silence.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]\n"
        "    classifier: true",
        {"default": False}, default="`false`", value=Value("boolean")),
    "parts": Key(
        "list of parts ([keys](#a-part-of-a-multi-part-axis-parts-items))",
        "A multi-part axis (BiasConnect's disability): one yes/no "
        "question per part, each asked on its own; an image takes the part answered yes most "
        "surely, or `none` when every part is answered no (under `abstain_below`, a part "
        "answered less surely is unread: with no sure yes the image abstains). Needs "
        "`none`; `question` and `choices` may then be left out.",
        "axes:\n"
        "  disability:\n"
        "    parts:\n"
        '      - {value: wheelchair, question: "Is this person on a wheelchair (yes or no)?",\n'
        '         statements: {yes: "a photo of a person in a wheelchair", no: "a photo of a '
        'person"}}\n'
        '      - {value: blind, question: "Is this person blind (yes or no)?"}\n'
        "    none: fit",
        {"type": "array", "minItems": 1}),
    "none": Key(
        "string", "With `parts` only (and then required): the value of an image for which no "
        "part applies. It must differ from every part value.",
        "axes:\n"
        "  disability:\n"
        "    parts:\n"
        '      - {value: blind, question: "Is this person blind (yes or no)?"}\n'
        "    none: fit",
        value=Value("text"), required_words="with `parts`"),
    "phrases": Key(
        "mapping choice → string", f"With `counterfactuals: {LLM_COUNTERFACTUALS}` only: how "
        "the LLM should write each value into the prompt (`outdoors` → \"working "
        "outdoors\").",
        "axes:\n"
        "  environment:\n"
        '    question: "Is the person indoors or outdoors?"\n'
        "    choices: [indoors, outdoors]\n"
        f"    counterfactuals: {LLM_COUNTERFACTUALS}\n"
        "    phrases: {indoors: working indoors, outdoors: working outdoors}",
        CHOICE_TEXTS, default="the choice itself"),
    "names": Key(
        "list of strings", "More words that name the axis (`man`, `woman`, `girl` for "
        "gender). Bias-Guided Prompt Search drops any prompt containing one of them, a choice "
        "or a phrase: a prompt that says \"man\" does not hide a gender bias.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]\n"
        "    names: [man, woman, boy, girl]",
        NAMES, default="none: only the choices and phrases"),
    "judge_calibration": Key(
        "`counterfactual`, `none` or `{folder: PATH}`", "Where the judge's confusion on this "
        "axis is measured, for `judge_correction`: `counterfactual` (the axis' counterfactual "
        "images of the item's subject, each labelled with the value its prompt asked for, at "
        "the check's images per prompt: an IS check on the subject draws the same ones), a "
        "labelled folder (relative to the suite; `index.jsonl` with `{file, <axis>: value}` "
        "per line, as `judge_agrees` reads: a user's real labels, FairFace-style), or `none`. "
        "Read by `w1_below`, `entropy_below` and `max_skew_below`.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]\n"
        "    judge_calibration: {folder: judges/labelled}",
        {"oneOf": [{"enum": ["counterfactual", "none"]},
                   {"type": "object", "properties": {"folder": TEXT}, "required": ["folder"],
                    "additionalProperties": False}]},
        default="`counterfactual` when the axis has counterfactuals, else `none`"),
    "abstain_below": Key(
        "number in [0, 1)", "The judge abstains on an image whose most probable answer on "
        "this axis is below this probability: the image is counted as abstained (per prompt, "
        "in every message) and leaves the shares, so a judge can say \"I can't tell\" (ENTIGEN's "
        "uncertain class). Beats `--t2i-abstain-below`.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]\n"
        "    abstain_below: 0.7",
        value=Value("number", minimum=0, below=1, unit="(a probability)"),
        default="`--t2i-abstain-below`, else 0 (every image answered)"),
})

# -- one part of a multi-part axis ------------------------------------------------------------

PART = Section('in a part', {
    "value": Key(
        "string", "The axis value an image takes when this part's answer is yes.",
        AXIS.keys["none"].example, value=Value("text"), required=True),
    "question": Key(
        "string", "A yes/no question for this part.", AXIS.keys["none"].example,
        value=Value("text"), required=True),
    "statements": Key(
        "mapping `yes`/`no` → string (both)", "For a CLIP-style VQA model: the two captions "
        "compared for yes and no.",
        AXIS.keys["parts"].example,
        {"type": "object", "properties": {"yes": TEXT, "no": TEXT}, "required": ["yes", "no"],
         "additionalProperties": False},
        default="the question"),
})

# -- ``models:`` ------------------------------------------------------------------------------

MODEL_OPTIONS = {"type": "object", "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
                 "additionalProperties": {"type": ["string", "number", "boolean", "null"]}}
"""A model's loading options, ``--t2i-model-option``'s keys (the loader checks dtype and
enable_model_cpu_offload)."""
MODEL_ENTRY = {"anyOf": [TEXT, {"type": "object", "properties": {"model": TEXT,
                                                                 "options": MODEL_OPTIONS},
                                "required": ["model"], "additionalProperties": False}]}
"""A role's model: a path or hub id, or ``{model, options}``."""
LOADING = ("Either the model (a path relative to the suite file, or a hub id) or "
           "`{model: ..., options: {KEY: VALUE}}`: `options` are its `from_pretrained` keywords, "
           "as `--t2i-model-option` takes them (`variant: fp16`, `dtype: bf16`, "
           "`text_encoder_3: null` for SD3 saved without T5, `enable_model_cpu_offload: true`); "
           "they apply to this model only, and the command line's options win key by key.")

MODELS = Section('in models', {
    "candidate": Key(
        "string (path or hub id), or mapping", "The model under test. " + LOADING,
        "models:\n"
        "  candidate:\n"
        "    model: stabilityai/stable-diffusion-3-medium-diffusers\n"
        "    options: {text_encoder_3: null, tokenizer_3: null, dtype: fp16}",
        MODEL_ENTRY, default="`--t2i-model`"),
    "baseline": Key(
        "string (path or hub id), or mapping", "The model a candidate is compared with "
        "(`no_regression`: the model before the fine-tune). " + LOADING.replace(
            "--t2i-model-option", "--t2i-baseline-model-option"),
        "models: {baseline: stabilityai/stable-diffusion-2-1, candidate: my-org/sd-finetune}",
        MODEL_ENTRY, default="`--t2i-baseline-model`"),
})

# -- keys every check has (``load.CHECK_KEYS``) and the common parameters ------------------------

CHECK = Section('in a check', {
    "id": Key(
        "name", "The check's name, unique in the suite: the first part of its pytest items "
        "(`severity[doctor-gender]`, select with `-k severity`). Letters, digits, `_`, `.`, "
        "`-`.",
        "checks:\n"
        "  - {id: severity, kind: entropy_below, axes: [gender], threshold: 0.5}",
        {"type": "string", "pattern": NAME_PATTERN.pattern}, required=True),
    "kind": Key(
        "check kind", "What the check measures and how it judges: one of the kinds below "
        "(`register_check` adds more, which this reference and the schema do not know).",
        "checks:\n"
        "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35}",
        {}, required=True),
    "subjects": Key(
        "list of strings", "Judge only these of the suite's subjects (each must be one of "
        "them). Kinds whose items are one per check (see the kinds table) ignore it.",
        "checks:\n"
        "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
        "subjects: [doctor, nurse]}",
        NAMES, default="all the suite's subjects"),
    "marks": Key(
        "list of marker names", "pytest marks put on every item of the check, by name "
        "(without arguments). `xfail` marks a planted or known bias: with `xfail_strict` a "
        "check that stops catching it fails the run. Under `--strict-markers` a mark must be "
        "registered.",
        "checks:\n"
        "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, marks: [xfail]}",
        {"type": "array", "items": {"type": "string", "pattern": MARKER_PATTERN.pattern},
         "minItems": 1, "uniqueItems": True},
        default="none"),
})

COMMON_EXAMPLES = {
    "confidence": "checks:\n"
                  "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
                  "confidence: 0.95}",
    "burden": "checks:\n"
              "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
              "confidence: 0.95, burden: check}",
    "protocol": "checks:\n"
                "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
                "confidence: 0.95, protocol: paper}",
    "judge_correction": "checks:\n"
                        "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
                        "confidence: 0.95, judge_correction: full}",
    "images_per_prompt": "checks:\n"
                         "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
                         "confidence: 0.95, images_per_prompt: auto}",
    "margin": "checks:\n"
              "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
              "confidence: 0.95, images_per_prompt: auto, margin: 0.05}",
}
"""An example for each of ``kinds.COMMON_PARAMS`` (their meaning is the ``Param.doc``)."""

COMMON_DEFAULTS = {
    "confidence": "the suite's `confidence:`, else none: a point decision; intervals at "
                  "`--t2i-confidence`",
    "burden": "the suite's `burden:`, else `model`",
    "protocol": "the suite's `protocol:`, else `gate`",
    "judge_correction": "the suite's `judge_correction:`, else `on`",
    "images_per_prompt": "the suite's `defaults`",
    "margin": "0.1",
}
"""The effective default of each common parameter, in words (absent means "inherit": the
suite's, the command line's; ``margin``'s is its field's)."""



def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
