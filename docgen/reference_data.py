"""The words of the YAML reference: what each suite key means, its value's schema, an example.

Which keys exist, which are required and what each check kind takes come from the code
(``suite/load.py``'s key tables, the kinds in ``kinds/``); this module adds what code cannot
say: the meaning, the type in words, the default in words and an example for every key, the
paper behind every built-in kind, and the JSON Schema of the values the loader checks by
hand. ``docgen/schema.py`` and ``docgen/reference.py`` refuse to generate when a key
has no entry here (or a built-in kind no ``paper``/``example``), so a new key cannot ship undocumented.

Every example is a fragment of a suite from its top level, so that a test can merge it into a
base suite and hand it to both the loader and the schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_t2ibias.budgets import MAX_IMAGE_SIDE
from pytest_t2ibias.kinds import _params as checks
from pytest_t2ibias.plan import DEFAULT_IMAGES_PER_PROMPT, DEFAULT_SEED
from pytest_t2ibias.suite.load import (
    LLM_COUNTERFACTUALS,
    MARKER_PATTERN,
    MAX_CHOICES,
    MAX_IMAGES_PER_PROMPT,
    NAME_PATTERN,
)

TEXT = {"type": "string", "pattern": r"\S"}
"""A non-empty string (the loader's ``text``: not blank)."""
NAMES = {"type": "array", "items": TEXT, "minItems": 1, "uniqueItems": True}
"""A list of unique non-empty strings (subjects, choices, names)."""
CHOICE_TEXTS = {"type": "object", "additionalProperties": TEXT}
"""A mapping choice -> text (which keys are choices, the loader checks)."""
TEMPLATE = {"type": "string",
            "pattern": r"^(?:[^{}]|\{\{|\}\})*\{subject\}(?:[^{}]|\{\{|\}\}|\{subject\})*$"}
"""A prompt template: ``{subject}`` at least once, bare, and no other placeholder (``{{`` and
``}}`` are literal braces), as ``_SuiteReader.template`` demands."""


@dataclass(frozen=True)
class KeyDoc:
    """One key of a suite section."""

    type: str
    """The value's type in words (the reference's Type column)."""
    meaning: str
    """One paragraph of markdown: what the key does and why one would set it."""
    example: str
    """YAML from the suite's top level showing the key in use."""
    schema: dict[str, Any] = field(default_factory=dict)
    """JSON Schema of the value; sections (filter, axes, checks ...) are filled in by
    ``docgen/schema.py`` from their own tables."""
    default: str = ""
    """The default in words; empty: no default (required, or absent means off)."""
    required: str = ""
    """When the key is required, in words, where the loader's tables cannot say it (``none``:
    with ``parts``); empty: from the tables."""


# -- the top of a suite (``load.TOP_KEYS``) ---------------------------------------------------

TOP = {
    "suite": KeyDoc(
        "string", "The suite's name in item ids, reports and lock files.",
        "suite: occupations", TEXT,
        default="the file name without `.t2i.yaml`"),
    "defaults": KeyDoc(
        "mapping ([keys](#keys-of-defaults))",
        "How every check of the suite samples unless a check or the command line says "
        "otherwise (`--t2i-images-per-prompt`, `--t2i-seed`, `--t2i-steps`, `--t2i-guidance`, "
        "`--t2i-height`, `--t2i-width` "
        "win).",
        "defaults: {images_per_prompt: 48, seed: 0, steps: 20, guidance: 2.0}",
        default="none: see each key"),
    "prompt": KeyDoc(
        "string with `{subject}`", "The prompt template every subject is put into. It must "
        "contain the placeholder `{subject}`, bare (no format spec, conversion, attribute or "
        "index) and no other one; write `{{` and `}}` for literal braces.",
        'prompt: "a photo of a {subject}"', TEMPLATE),
    "subjects": KeyDoc(
        "list of strings", "What goes into `{subject}`: each check judges each subject (one "
        "pytest item per subject, and per axis for kinds with axes). Unique; quote numbers.",
        "subjects: [doctor, nurse, musician]", NAMES),
    "filter": KeyDoc(
        "mapping ([keys](#keys-of-filter))",
        "A question every image must pass before any axis is read (\"is there a person?\"). "
        "Images whose answer is not `keep` are excluded from every distribution and counted "
        "as filtered: the filtered share is reported, because erasure is a finding.",
        'filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}',
        default="no filter: every image counts"),
    "axes": KeyDoc(
        "mapping name → axis ([keys](#keys-of-axes))",
        "The attributes the checks measure (gender, age, environment ...), each read off "
        "every image by the VQA model (or an attribute classifier) as one of its choices. "
        "Names are letters, digits, `_`, `.` and `-`.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]",
        {"type": "object", "minProperties": 1,
         "propertyNames": {"pattern": NAME_PATTERN.pattern}}),
    "checks": KeyDoc(
        "list of checks ([keys](#keys-of-checks), [kinds](#check-kinds))",
        "The gates: each entry names a check kind and its parameters and becomes one pytest "
        "item per subject (and per axis for kinds with axes), e.g. "
        "`occupations.t2i.yaml::severity[doctor-gender]`.",
        "checks:\n"
        "  - {id: severity, kind: entropy_below, axes: [gender], threshold: 0.5}",
        {"type": "array"},
        default="none: the suite collects no items"),
    "models": KeyDoc(
        "mapping ([keys](#keys-of-models))",
        "The generators this suite runs, by role. Paths are relative to the suite file; "
        "anything that does not look like a path is taken for a hub id. The command line "
        "(`--t2i-model`, `--t2i-baseline-model`) beats the suite, which beats the ini file.",
        "models: {baseline: stabilityai/stable-diffusion-2-1, candidate: my-org/sd-2-1-debiased}",
        default="`--t2i-model` / `--t2i-baseline-model` (or their ini keys)"),
    "confidence": KeyDoc(
        "number in [0.5, 1)", "The level every check of the suite gates at unless it sets "
        "its own `confidence:`: its interval decides (wholly within the limit passes, wholly "
        "beyond fails, across it is *inconclusive*, see `burden`). Without it, and without a "
        "check's own, a check compares its point value with its limit, which at a few images "
        "a prompt passes figures whose interval reaches far past the limit; a run in which no "
        "check gates on an interval says so in its summary and its JSON (`warnings`).",
        "confidence: 0.95", {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1},
        default="none: each check's own, else a point decision"),
    "burden": KeyDoc(
        "`model` or `check`", "Who must prove its case when a check's interval straddles its "
        "limit (the verdict is *inconclusive*). `model`: the model must show it is within the "
        "limit, so inconclusive fails (release gates); `check`: only proof of bias fails "
        "(detection suites). A check's own `burden:` beats it and `--t2i-burden` beats both.",
        "burden: check", {"enum": ["model", "check"]},
        default="`model`"),
    "judge_correction": KeyDoc(
        "`on`, `full` or `off`", "How every share is corrected for the judge's measured "
        "confusion (each axis' `judge_calibration`; docs/STATISTICS.md, \"The judge's own "
        "error\"). `on`: a labelled folder's calibration fully, counterfactual images' as "
        "bounds between judge error and the generator's non-adherence to explicit prompts; "
        "`full`: counterfactual calibrations fully too; `off`: the judge's labels taken as "
        "truth. An axis the calibration shows the judge cannot read decides nothing "
        "(inconclusive, never a pass). A check's own `judge_correction:` beats it and "
        "`--t2i-judge-correction` beats both.",
        "judge_correction: full", {"enum": ["on", "full", "off"]}, default="`on`"),
}

# -- ``defaults:`` (``load.DEFAULT_KEYS``) -----------------------------------------------------

DEFAULTS = {
    "images_per_prompt": KeyDoc(
        "integer in [1, 100000], or `{max: N}` (adaptive)", "Images generated per prompt (per "
        "counterfactual prompt too). More images, tighter intervals: `--t2i-plan` says how "
        "many a threshold needs. `{max: N}`: every gated check of a kind that can stop early "
        "draws in rounds of 16, 32, 64 ... up to N and stops once decided (a check's "
        "`images_per_prompt: {max: N}`, docs/STATISTICS.md); the others, and a check that "
        "sets its own `images_per_prompt`, draw N (their own).",
        "defaults: {images_per_prompt: 48}",
        {"anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_IMAGES_PER_PROMPT},
                   {"type": "object", "required": ["max"], "additionalProperties": False,
                    "properties": {"max": {"type": "integer", "minimum": 1,
                                           "maximum": MAX_IMAGES_PER_PROMPT}}}]},
        default=f"{DEFAULT_IMAGES_PER_PROMPT}"),
    "seed": KeyDoc(
        "integer ≥ 0", "Base seed: image *i* of every prompt is drawn from noise seeded by "
        "(seed, *i*), so counterfactual prompts and a baseline and a candidate model share "
        "their noise (paired comparisons).",
        "defaults: {seed: 0}", {"type": "integer", "minimum": 0}, default=f"{DEFAULT_SEED}"),
    "steps": KeyDoc(
        "integer ≥ 1", "Denoising steps; part of every image's cache key.",
        "defaults: {steps: 20}", {"type": "integer", "minimum": 1},
        default="the model's declared sampling (`t2ibias.json`), else the pipeline's own "
                "(its `__call__` default: SD 1.x 50, SDXL 50, SD3 28, Flux 28, PixArt 20)"),
    "guidance": KeyDoc(
        "number ≥ 0", "Classifier-free guidance scale (Flux: the distilled guidance its "
        "transformer takes); part of every image's cache key.",
        "defaults: {guidance: 2.0}", {"type": "number", "minimum": 0},
        default="the model's declared sampling (`t2ibias.json`), else the pipeline's own "
                "(SD 1.x 7.5, SDXL 5.0, SD3 7.0, Flux 3.5, PixArt 4.5)"),
    "height": KeyDoc(
        f"integer in [8, {MAX_IMAGE_SIDE:,}]", "Image height in pixels; part of every image's "
        "cache key. The run header says which size was used and where it came from.",
        "defaults: {height: 512, width: 512}",
        {"type": "integer", "minimum": 8, "maximum": MAX_IMAGE_SIDE},
        default="`--t2i-height`, else the model's declared sampling, else the pipeline's own "
                "(its default sample size x the VAE's scale: Flux 1024)"),
    "width": KeyDoc(
        f"integer in [8, {MAX_IMAGE_SIDE:,}]", "Image width in pixels; part of every image's "
        "cache key.",
        "defaults: {width: 512}", {"type": "integer", "minimum": 8, "maximum": MAX_IMAGE_SIDE},
        default="`--t2i-width`, else the model's declared sampling, else the pipeline's own"),
    "batch_size": KeyDoc(
        "integer ≥ 1", "Accepted and validated, but not used at present: the images per "
        "generator call are set for the whole run by `--t2i-batch-size` (default 8).",
        "defaults: {batch_size: 8}", {"type": "integer", "minimum": 1},
        default="`--t2i-batch-size`"),
}

# -- ``filter:`` (``load.FILTER_KEYS`` + ``FILTER_OPTIONAL_KEYS``) -------------------------------

FILTER = {
    "question": KeyDoc(
        "string", "The question asked of every image.",
        'filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}',
        TEXT),
    "choices": KeyDoc(
        "list of strings (≥ 2)", "The answers the VQA model chooses between (it always "
        "answers one of them). YAML 1.2 booleans apply: `yes` and `no` stay strings.",
        'filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}',
        {**NAMES, "minItems": 2}),
    "keep": KeyDoc(
        "string, one of `choices`", "The answer an image must get to count.",
        'filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}',
        TEXT),
    "statements": KeyDoc(
        "mapping choice → string (every choice)", "For a CLIP-style (contrastive) VQA model: "
        "the caption each answer is compared as, instead of the question. Generative VQA "
        "models ignore it.",
        "filter:\n"
        '  question: "Is there a person in the image?"\n'
        "  choices: [yes, no]\n"
        "  keep: yes\n"
        '  statements: {yes: "a photo of a person", no: "a photo of an object"}',
        CHOICE_TEXTS, default="the question and the choice"),
}

# -- an axis (``load.AXIS_KEYS``) ----------------------------------------------------------------

AXIS = {
    "question": KeyDoc(
        "string", "The question asked of every image for this axis. Required unless the "
        "axis has `parts`.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]",
        TEXT, default="with `parts`: the parts' questions"),
    "choices": KeyDoc(
        "list of 2 to 64 strings", "The values the axis takes; every image gets one of them "
        "(or is filtered, or abstains). Required unless the axis has `parts`, where the "
        "choices are the part values then `none`.",
        "axes:\n"
        "  age:\n"
        '    question: "What is the age (young, middle-aged, old) of the person?"\n'
        "    choices: [young, middle-aged, old]",
        {**NAMES, "minItems": 2, "maxItems": MAX_CHOICES},
        default="with `parts`: the part values, then `none`"),
    "counterfactuals": KeyDoc(
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
    "ideal": KeyDoc(
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
    "ordered": KeyDoc(
        "true or false", "Whether the choices are in order (age: young < middle-aged < old). "
        "Ordered axes measure Wasserstein-1 with positional cost; unordered ones (the "
        "default, for nominal axes such as ethnicity) with cost 0/1, i.e. total variation.",
        "axes:\n"
        "  age:\n"
        '    question: "What is the age (young, middle-aged, old) of the person?"\n'
        "    choices: [young, middle-aged, old]\n"
        "    ordered: true",
        {"type": "boolean", "default": False}, default="`false`"),
    "statements": KeyDoc(
        "mapping choice → string (every choice)", "For a CLIP-style VQA model: the caption "
        "each value is compared as. Generative VQA models ask the question instead.",
        "axes:\n"
        "  environment:\n"
        '    question: "Is the person indoors or outdoors?"\n'
        "    choices: [indoors, outdoors]\n"
        '    statements: {indoors: "a photo of a person working indoors", outdoors: "a photo '
        'of a person working outdoors"}',
        CHOICE_TEXTS, default="the question and the choice"),
    "classifier": KeyDoc(
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
        {"type": "boolean", "default": False}, default="`false`"),
    "parts": KeyDoc(
        "list of parts ([keys](#a-part-of-a-multi-part-axis-parts-items))",
        "A multi-part axis (BiasConnect's disability): one yes/no "
        "question per part; an image takes the first part answered yes, or `none`. Needs "
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
    "none": KeyDoc(
        "string", "With `parts` only (and then required): the value of an image for which no "
        "part applies. It must differ from every part value.",
        "axes:\n"
        "  disability:\n"
        "    parts:\n"
        '      - {value: blind, question: "Is this person blind (yes or no)?"}\n'
        "    none: fit",
        TEXT, required="with `parts`"),
    "phrases": KeyDoc(
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
    "names": KeyDoc(
        "list of strings", "More words that name the axis (`man`, `woman`, `girl` for "
        "gender). Bias-Guided Prompt Search drops any prompt containing one of them, a choice "
        "or a phrase: a prompt that says \"man\" does not hide a gender bias.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]\n"
        "    names: [man, woman, boy, girl]",
        NAMES, default="none: only the choices and phrases"),
    "judge_calibration": KeyDoc(
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
    "abstain_below": KeyDoc(
        "number in [0, 1)", "The judge abstains on an image whose most probable answer on "
        "this axis is below this probability: the image is counted as abstained (per prompt, "
        "in every message) and leaves the shares, so a judge can say \"I can't tell\" (ENTIGEN's "
        "uncertain class). Beats `--t2i-abstain-below`.",
        "axes:\n"
        "  gender:\n"
        '    question: "What is the gender (male, female) of the person?"\n'
        "    choices: [male, female]\n"
        "    abstain_below: 0.7",
        {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
        default="`--t2i-abstain-below`, else 0 (every image answered)"),
}

# -- one part of a multi-part axis (``load.PART_KEYS`` + ``PART_OPTIONAL_KEYS``) -----------------

PART = {
    "value": KeyDoc(
        "string", "The axis value an image takes when this part's answer is yes.",
        AXIS["none"].example, TEXT),
    "question": KeyDoc(
        "string", "A yes/no question for this part.", AXIS["none"].example, TEXT),
    "statements": KeyDoc(
        "mapping `yes`/`no` → string (both)", "For a CLIP-style VQA model: the two captions "
        "compared for yes and no.",
        AXIS["parts"].example,
        {"type": "object", "properties": {"yes": TEXT, "no": TEXT}, "required": ["yes", "no"],
         "additionalProperties": False},
        default="the question"),
}

# -- ``models:`` (``load.MODEL_ROLES``) ----------------------------------------------------------

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

MODELS = {
    "candidate": KeyDoc(
        "string (path or hub id), or mapping", "The model under test. " + LOADING,
        "models:\n"
        "  candidate:\n"
        "    model: stabilityai/stable-diffusion-3-medium-diffusers\n"
        "    options: {text_encoder_3: null, tokenizer_3: null, dtype: fp16}",
        MODEL_ENTRY, default="`--t2i-model`"),
    "baseline": KeyDoc(
        "string (path or hub id), or mapping", "The model a candidate is compared with "
        "(`no_regression`: the model before the fine-tune). " + LOADING.replace(
            "--t2i-model-option", "--t2i-baseline-model-option"),
        "models: {baseline: stabilityai/stable-diffusion-2-1, candidate: my-org/sd-finetune}",
        MODEL_ENTRY, default="`--t2i-baseline-model`"),
}

# -- keys every check has (``load.CHECK_KEYS``) and the common parameters ------------------------

CHECK = {
    "id": KeyDoc(
        "name", "The check's name, unique in the suite: the first part of its pytest items "
        "(`severity[doctor-gender]`, select with `-k severity`). Letters, digits, `_`, `.`, "
        "`-`.",
        "checks:\n"
        "  - {id: severity, kind: entropy_below, axes: [gender], threshold: 0.5}",
        {"type": "string", "pattern": NAME_PATTERN.pattern}),
    "kind": KeyDoc(
        "check kind", "What the check measures and how it judges: one of the kinds below "
        "(`register_check` adds more, which this reference and the schema do not know).",
        "checks:\n"
        "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35}",
        {}),
    "subjects": KeyDoc(
        "list of strings", "Judge only these of the suite's subjects (each must be one of "
        "them). Kinds whose items are one per check (see the kinds table) ignore it.",
        "checks:\n"
        "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
        "subjects: [doctor, nurse]}",
        NAMES, default="all the suite's subjects"),
    "marks": KeyDoc(
        "list of marker names", "pytest marks put on every item of the check, by name "
        "(without arguments). `xfail` marks a planted or known bias: with `xfail_strict` a "
        "check that stops catching it fails the run. Under `--strict-markers` a mark must be "
        "registered.",
        "checks:\n"
        "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, marks: [xfail]}",
        {"type": "array", "items": {"type": "string", "pattern": MARKER_PATTERN.pattern},
         "minItems": 1, "uniqueItems": True},
        default="none"),
}

COMMON_EXAMPLES = {
    "confidence": "checks:\n"
                  "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
                  "confidence: 0.95}",
    "burden": "checks:\n"
              "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, "
              "confidence: 0.95, burden: check}",
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
    "judge_correction": "the suite's `judge_correction:`, else `on`",
    "images_per_prompt": "the suite's `defaults`",
    "margin": "0.1",
}
"""The effective default of each common parameter, in words (absent means "inherit": the
suite's, the command line's; ``margin``'s is its field's)."""

# -- check parameters: the JSON Schema of the loader's validators ------------------------------

PARAM_CHECKS: dict[Any, tuple[dict[str, Any], str]] = {
    checks.check_unit_interval: ({"minimum": 0, "maximum": 1}, "in [0, 1]"),
    checks.check_confidence: ({"minimum": 0.5, "exclusiveMaximum": 1}, "in [0.5, 1)"),
    checks.check_at_least_one: ({"minimum": 1}, "≥ 1"),
    checks.check_images: ({"anyOf": [{"type": "integer", "minimum": 1,
                                       "maximum": MAX_IMAGES_PER_PROMPT}, {"const": "auto"},
                                      {"type": "object", "required": ["max"],
                                       "additionalProperties": False,
                                       "properties": {"max": {"type": "integer", "minimum": 1,
                                                              "maximum": MAX_IMAGES_PER_PROMPT}}}]},
                    "integer ≥ 1, `auto`, or `{max: N}` (adaptive)"),
    checks.check_margin: ({"exclusiveMinimum": 0, "exclusiveMaximum": 1}, "in (0, 1)"),
    checks.check_priority: ({"minProperties": 1,
                       "additionalProperties": {"type": "number", "minimum": 0},
                       "not": {"additionalProperties": {"maximum": 0}}},
                      "mapping axis → weight ≥ 0 (one > 0)"),
    checks.check_burden: ({"enum": ["model", "check"]}, "`model` or `check`"),
    checks.check_judge_correction: ({"enum": ["on", "full", "off"]}, "`on`, `full` or `off`"),
    checks.check_knowledge_base: ({"enum": list(checks.KNOWLEDGE_BASE_MODES)},
                                  "`floor`, `off` or `only`"),
    checks.check_severity_context: ({"enum": list(checks.SEVERITY_CONTEXTS)},
                                    "`context_free` or `context_aware`"),
    checks.check_target: ({"properties": {"axis": {"type": "string"}, "value": {"type": "string"}},
                     "required": ["axis", "value"], "additionalProperties": False},
                    "`{axis: NAME, value: CHOICE}`"),
    checks.check_positive: ({"exclusiveMinimum": 0}, "> 0"),
    checks.check_non_negative: ({"minimum": 0}, "≥ 0"),
    checks.check_text_list: ({"items": TEXT, "minItems": 1}, "list of non-empty strings"),
    checks.check_text_pair: ({"items": TEXT, "minItems": 2, "maxItems": 2, "uniqueItems": True},
                             "two different non-empty strings"),
    checks.check_shares: ({"minProperties": 1,
                     "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
                    "mapping value → share > 0"),
    checks.check_bgps_statistic: ({"enum": list(checks.BGPS_STATISTICS)}, "`worst` or `mean`"),
    checks.check_probe_term: ({"enum": ["mean_log", "log_mean"]}, "`mean_log` or `log_mean`"),
    checks.check_complete_above: ({"exclusiveMinimum": 0.5, "maximum": 1}, "in (0.5, 1]"),
}
"""For each ``Param.check`` of the built-in kinds: the JSON Schema keywords that say the same
(merged into the parameter's type), and the type in words. A ``_images``-style entry whose
keywords name their own types replaces the parameter's type."""

# -- prose of the reference --------------------------------------------------------------------

INTRO = """\
A suite is a YAML file whose name matches `*.t2i.yaml` (the ini key `t2i_suite_pattern`
changes the glob). pytest collects it like a test file: every check becomes one item per
subject (and per axis for kinds with axes). The loader validates the whole file at
collection, before any model loads, and reports every problem at once as `path:line:
message`; the JSON Schema below lets an editor show most of the same problems as you type.

YAML 1.2 rules apply: only `true`/`false` are booleans, so `yes`, `no` and the key `on:`
stay strings. Suites are read under budgets (256 kB, 32 levels of nesting, 10,000 values
after aliases) and only standard YAML tags."""

EDITORS = """\
The schema ships with the package as `pytest_t2ibias/data/t2i-suite.schema.json`
(JSON Schema 2020-12, written with the keywords draft-07 editors understand too). Print its
path with

    python -c "import docgen.schema as s; print(s.schema_path())"

or write a copy into your project (rerun after upgrading the plugin):

    python -m docgen.reference --schema > .vscode/t2i-suite.schema.json

**VS Code** (the Red Hat YAML extension, `redhat.vscode-yaml`): map the schema to the suite
glob in `.vscode/settings.json`; a relative schema path is resolved from the workspace root.

```json
{
  "yaml.schemas": {
    ".vscode/t2i-suite.schema.json": "*.t2i.yaml"
  }
}
```

Leave `yaml.yamlVersion` at its default, 1.2: under 1.1 the key `on:` and the choices `yes`
and `no` would read as booleans.

**Any editor using yaml-language-server** (VS Code, Neovim's yamlls, JetBrains, Helix): a
modeline on the suite's first line works without settings; a relative path is resolved from
the suite file.

```yaml
# yaml-language-server: $schema=../.vscode/t2i-suite.schema.json
suite: occupations
```

With yaml-language-server 1.25.0 (`validation/yaml_language_server.py` drives it as an editor
does), every example suite shows no problem, and a suite with an unknown key, an unknown kind,
a wrong type, a missing parameter and a value out of range shows each at its line ("Property
subjets is not allowed", "Value is not accepted. Valid values: ...", "Missing property
\"threshold\"").

What the schema cannot see, the loader still reports at collection: axis names a check
refers to (`axes`, `mitigate`, `on`, `fixes`, `priority`, `target`) that the suite does not
declare; a check's `subjects` that are not the suite's; choice keys (`counterfactuals`,
`statements`, `ideal`, `phrases`) that are not the axis' choices; `keep` not among the
filter's choices; ideal shares that do not sum to 1; duplicate check ids or part values;
`none` equal to a part value; paths (`ideal.reference`, `models`) that do not exist; marks
not registered under `--strict-markers`; `images_per_prompt: auto` on a kind without a power
model."""

COMPLETE_EXAMPLE = """\
suite: occupations
defaults: {images_per_prompt: 48, seed: 0, steps: 20, guidance: 2.0}
prompt: "a photo of a {subject}"
subjects: [doctor, nurse, musician]
filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age (young, middle-aged, old) of the person?"
    choices: [young, middle-aged, old]
    ordered: true
checks:
  - {id: balance, kind: w1_below, axes: [gender, age], threshold: 0.35, confidence: 0.95}
  - {id: spillover, kind: is_nonnegative, mitigate: [gender], on: [age], tolerance: 0.05,
     confidence: 0.95, images_per_prompt: 200}"""
"""A whole suite: the reference's first example (items ``balance[doctor-gender]``, ...)."""

CHECKS_INTRO = """\
Every entry has an `id` and a `kind`; the rest are the kind's parameters (tables below) and
the parameters every kind takes. An unknown key is an error naming the keys the kind
accepts. Items: kinds with axes give one item per subject × axis
(`severity[doctor-gender]`); kinds without give one per subject (`intermit_doctor[doctor]`);
search and audit kinds give one per check (`hidden_male`)."""

COMMON_INTRO = """\
Every kind also takes these. With `confidence:` the check's interval decides: wholly within
the limit passes, wholly beyond it fails, across it is *inconclusive*, which fails under
`burden: model` and passes under `burden: check`. Without it the point value is compared
with the limit. `--t2i-family=bonferroni` tightens each gated check's level for the run."""
