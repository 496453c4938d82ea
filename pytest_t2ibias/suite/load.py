"""Read a ``*.t2i.yaml`` suite into a validated ``Suite`` (format: INTERFACE.md, "YAML suites").

Validation happens here, at collection, so a typo costs a second instead of a model load.
Every problem of a file is reported at once, each as ``path:line: message``.
"""

from __future__ import annotations

import difflib
import math
import string
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .._settings import parse_model_options
from .._text import first_unsafe
from ..errors import SuiteError
from ..kinds import CHECK_KINDS, COMMON_PARAMS, CheckKind
from ..params import build
from ..suite_spec import (
    COUNTERFACTUAL_CALIBRATION,
    AxisSpec,
    CheckSpec,
    FilterSpec,
    Location,
    QuestionPart,
    Suite,
    SuiteDefaults,
)
from ._yaml import Document, KeyPath, load_yaml
from .language import (
    AXIS,
    CHECK,
    DEFAULTS,
    FILTER,
    LLM_COUNTERFACTUALS,
    MARKER_PATTERN,
    MAX_CHOICES,
    MODELS,
    NAME_PATTERN,
    PART,
    TOP,
    Section,
)

MODEL_ENTRY_KEYS = ("model", "options")
"""A ``models:`` role as a mapping: the model and its loading options."""
YES_NO = ("yes", "no")

TEMPLATE_FIELDS = ("subject",)
"""The placeholders a prompt template may use, each bare: ``{subject}``."""
IDEAL_SUM_TOLERANCE = 1e-3
LINE_BREAKS = frozenset("\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029")
"""Characters that break or shift a line: a name (a subject, a choice, a mark, the suite's
name) holding one would start a line of its own in a failure message or a JUnit body
(``"doctor\nPASSED ..."`` forged a result line), and means nothing in a name."""


MAX_ITEMS = 20_000
"""Most pytest items one suite may make (checks x subjects x axes): collection stays bounded
in time and memory whatever the file says (a 43 kB suite could ask for 6,000,000)."""


def load_suite(path: Path | str) -> Suite:
    """Load and validate one suite file; raise ``SuiteError`` listing every problem in it."""
    return _SuiteReader(load_yaml(Path(path))).read()


def suite_name_from_path(path: Path) -> str:
    """``occupations.t2i.yaml`` -> ``occupations``: the name when ``suite:`` is left out."""
    name = path.name
    for suffix in (".t2i.yaml", ".t2i.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


class _SuiteReader:
    """Walks one document, collecting problems instead of stopping at the first."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.path = document.path
        self.problems: list[SuiteError] = []
        self.axis_names: list[str] = []  # declared, even if invalid: no cascade of errors
        self.declared_axes: dict[str, AxisSpec] = {}
        self.confidence: float | None = None  # the suite's confidence: (a check's own wins)

    # -- reporting ---------------------------------------------------------------------------

    def problem(self, at: KeyPath, message: str) -> None:
        self.problems.append(SuiteError(self.path, self.document.line(*at), message))

    def location(self, at: KeyPath) -> Location:
        return Location(self.path, self.document.line(*at))

    def unknown_keys(self, mapping: dict[Any, Any], at: KeyPath, allowed: Iterable[str], where: str) -> None:
        allowed = list(allowed)
        for key in mapping:
            if key not in allowed:
                self.problem((*at, key), f"unknown key {key!r} {where}; {_suggest(str(key), allowed)}")

    def missing(self, mapping: dict[Any, Any], at: KeyPath, keys: Iterable[str], where: str) -> bool:
        """Report required ``keys`` absent from ``mapping``; True when all are present."""
        absent = [key for key in keys if key not in mapping]
        for key in absent:
            self.problem(at, f"missing required key {key!r} {where}")
        return not absent

    def keys(self, mapping: dict[Any, Any], at: KeyPath, section: Section, where: str = "") -> bool:
        """Report keys of ``mapping`` that ``section`` does not declare and required ones it
        lacks; True when none is missing."""
        where = where or section.where
        self.unknown_keys(mapping, at, section.names, where)
        return self.missing(mapping, at, section.required, where)

    def scalar(self, mapping: dict[Any, Any], at: KeyPath, section: Section, name: str) -> Any:
        """``mapping[name]`` checked against its ``Value`` in ``section``; None when absent
        or refused (and reported at its line)."""
        if name not in mapping:
            return None
        rule = section.keys[name].value
        assert rule is not None, f"{name} {section.where} declares no Value"
        value = mapping[name]
        problem = rule.problem(value)
        if problem:
            label = ".".join((*(str(step) for step in at), name))
            self.problem((*at, name), f"{label} {problem}, got {_describe(value)}")
            return None
        return rule.read(value)

    # -- typed values ------------------------------------------------------------------------

    def mapping(self, value: Any, at: KeyPath, what: str) -> dict[Any, Any] | None:
        if isinstance(value, dict):
            return value
        self.problem(at, f"{what} must be a mapping, got {_describe(value)}")
        return None

    def text(self, value: Any, at: KeyPath, what: str) -> str | None:
        if isinstance(value, str) and value.strip():
            return value
        self.problem(at, f"{what} must be a non-empty string, got {_describe(value)}")
        return None

    def names(self, value: Any, at: KeyPath, what: str, minimum: int = 1) -> tuple[str, ...]:
        """A list of unique non-empty strings (subjects, choices, marks)."""
        if not isinstance(value, list):
            self.problem(at, f"{what} must be a list of strings, got {_describe(value)}")
            return ()
        names: list[str] = []
        for index, item in enumerate(value):
            if not (isinstance(item, str) and item.strip()):
                self.problem((*at, index), f"{what} must be strings (quote numbers), got {_describe(item)}")
            elif not self.one_line(item, (*at, index), what):
                continue
            elif item in names:
                self.problem((*at, index), f"{what}: {item!r} is listed twice")
            else:
                names.append(item)
        if len(value) < minimum:
            self.problem(at, f"{what} must list at least {minimum}, got {len(value)}")
        return tuple(names)

    def one_line(self, value: str, at: KeyPath, what: str) -> bool:
        """A name is one line: refuse (and report) ``value`` if it holds a ``LINE_BREAKS``
        character; True if it holds none."""
        broken = next((c for c in value if c in LINE_BREAKS), None)
        if broken is None:
            return True
        self.problem(at, f"{what}: {_describe(value)} holds the line break or tab "
                         f"{broken.encode('unicode_escape').decode()}; a name is one line of "
                         f"text (write it on one line, without \\n, \\r or \\t)")
        return False

    def template(self, value: Any, at: KeyPath, what: str) -> str | None:
        """A prompt template with ``{subject}`` and no other placeholder.

        Only the bare field is allowed: a format spec (``{subject:>2000000000}`` allocates
        gigabytes), a conversion (``{subject!r}``), attribute access or indexing
        (``{subject.__class__}``) would run code paths of ``str.format`` on the user's data.
        """
        template = self.text(value, at, what)
        if template is None:
            return None
        try:
            fields = [(name, spec, conversion) for _, name, spec, conversion
                      in string.Formatter().parse(template) if name is not None]
        except ValueError as exc:
            self.problem(at, f"{what} has unbalanced braces ({exc}); write {{{{ and }}}} for "
                             f"literal braces, got {_describe(template)}")
            return None
        for name, spec, conversion in fields:
            if name not in TEMPLATE_FIELDS or spec or conversion:
                written = "{" + name + (f"!{conversion}" if conversion else "") + \
                          (f":{spec}" if spec else "") + "}"
                shown = written if len(written) <= 60 else written[:57] + "..."
                self.problem(at, f"{what} may use only the placeholder {{subject}}, as is "
                                 f"(no format spec, conversion, attribute or index), got "
                                 f"{shown!r}; write {{{{ and }}}} for literal braces")
                return None
        if not fields:
            self.problem(at, f"{what} must contain {{subject}}, got {_describe(template)}")
            return None
        return template

    def choice_keys(self, mapping: dict[Any, Any], at: KeyPath, choices: tuple[str, ...], what: str) -> None:
        for key in mapping:
            if key not in choices:
                self.problem((*at, key), f"{what}: {key!r} is not a choice of the axis; "
                                         f"{_suggest(str(key), choices, 'choices')}")

    # -- sections ----------------------------------------------------------------------------

    def read(self) -> Suite:
        data = self.document.data
        if not isinstance(data, dict):
            raise SuiteError(self.path, self.document.line(),
                             f"a suite must be a mapping with keys {', '.join(TOP.names)}; "
                             f"got {_describe(data)}")
        self.keys(data, (), TOP)
        self.valid_text(data, ())
        name = suite_name_from_path(self.path)
        if "suite" in data:
            given = self.scalar(data, (), TOP, "suite")
            if given is not None and self.one_line(given, ("suite",), "suite (the suite's name)"):
                name = given
        defaults = self.defaults(data["defaults"]) if "defaults" in data else SuiteDefaults()
        prompt = self.template(data["prompt"], ("prompt",), "prompt") if "prompt" in data else None
        subjects = self.names(data["subjects"], ("subjects",), "subjects") if "subjects" in data else ()
        filter_spec = self.filter(data["filter"]) if "filter" in data else None
        axes = self.axes(data["axes"]) if "axes" in data else {}
        self.declared_axes = axes
        self.confidence = self.scalar(data, (), TOP, "confidence")
        checks = self.checks(data["checks"], subjects, axes) if "checks" in data else ()
        self.item_count(checks, subjects)
        models, model_options = self.models(data["models"]) if "models" in data else ({}, {})
        burden = self.scalar(data, (), TOP, "burden")
        correction = self.scalar(data, (), TOP, "judge_correction")
        protocol = self.scalar(data, (), TOP, "protocol")
        if self.problems:
            raise SuiteError.combine(self.problems)
        assert prompt is not None  # absent or malformed, it was a problem above
        return Suite(name=name, path=self.path, prompt=prompt, subjects=subjects, axes=axes,
                     checks=checks, filter=filter_spec, defaults=defaults,
                     location=self.location(()), models=models, model_options=model_options,
                     burden=burden, judge_correction=correction, protocol=protocol,
                     confidence=self.confidence)

    def valid_text(self, value: Any, at: KeyPath) -> None:
        """Every string (and key) of the suite is text a report can show: a lone surrogate
        (``"\\ud800"`` in YAML) cannot be encoded and would fail every item twice; a control
        character (an ESC, a CR) or a bidirectional override would act on the terminal or
        the reader rather than be read (line breaks and tabs are text)."""
        if isinstance(value, str):
            bad = next((c for c in value if "\ud800" <= c <= "\udfff"), None)
            if bad is not None:
                self.problem(at, f"{_describe(value)} is not valid Unicode (a lone surrogate "
                                 f"{bad.encode('unicode_escape').decode()})")
                return
            unsafe = first_unsafe(value.replace("\n", " ").replace("\t", " "))
            if unsafe is not None:
                self.problem(at, f"{_describe(value)} holds the control character {unsafe}, "
                                 "which a terminal would obey; write text only")
        elif isinstance(value, dict):
            for key, item in value.items():
                self.valid_text(key, (*at, key) if isinstance(key, str) else at)
                self.valid_text(item, (*at, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.valid_text(item, (*at, index))

    def item_count(self, checks: tuple[CheckSpec, ...], subjects: tuple[str, ...]) -> None:
        """Refuse a suite whose checks x subjects x axes exceed ``MAX_ITEMS``, at the check
        that crosses the limit, naming the product."""
        total = 0
        for check in checks:
            kind = CHECK_KINDS[check.kind]
            chosen = 1 if not kind.per_subject else len(check.subjects or subjects)
            axes = max(1, len(check.axes))
            total += chosen * axes
            if total > MAX_ITEMS:
                self.problem(_at_check(self, check), f"check {check.id!r}: the suite makes "
                             f"{total:,} items up to here ({chosen} subjects x {axes} axes for "
                             f"this check), more than the {MAX_ITEMS:,} a suite may make; split "
                             "it into several suites or select fewer subjects or axes per check")
                return

    def models(self, value: Any) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """``models: {candidate: PATH, baseline: PATH}``: paths relative to the suite file;
        a role may instead be ``{model: PATH, options: {KEY: VALUE}}``, its loading options
        (``--t2i-model-option``'s keys: ``variant``, ``dtype``, ``text_encoder_3: null``...).

        A value whose first component exists next to the suite (``fixtures/toy-sd``) or that
        starts like a path (``./``, ``../``, ``/``, ``~``) must exist; anything else is taken
        for a hub id (``org/name``) and left as written.
        """
        at = ("models",)
        mapping = self.mapping(value, at, "models (role -> model)")
        if mapping is None:
            return {}, {}
        self.keys(mapping, at, MODELS)
        models: dict[str, str] = {}
        options: dict[str, dict[str, Any]] = {}
        for role in MODELS.names:
            if role not in mapping:
                continue
            where: KeyPath = (*at, role)
            entry, label = mapping[role], f"models.{role}"
            if isinstance(entry, dict):
                self.unknown_keys(entry, where, MODEL_ENTRY_KEYS, f"in {label}")
                self.missing(entry, where, ("model",), f"in {label}")
                if "options" in entry:
                    options[role] = self.model_options(entry["options"], (*where, "options"),
                                                       f"{label}.options")
                where, entry, label = (*where, "model"), entry.get("model"), f"{label}.model"
                if entry is None:
                    continue
            elif not isinstance(entry, str):
                self.problem(where, f"{label} must be a model (a path or hub id) or "
                                    f"{{model: ..., options: {{...}}}}, got {_describe(entry)}")
                continue
            model = self.model_path(entry, where, label)
            if model is not None:
                models[role] = model
        return models, options

    def model_path(self, value: Any, at: KeyPath, label: str) -> str | None:
        raw = self.text(value, at, label)
        if raw is None:
            return None
        found = self.suite_path(raw, at, label)
        if found is None:
            return None
        resolved, exists = found
        given = Path(raw).expanduser()
        if exists:
            return str(resolved)
        first = self.suite_path(given.parts[0], at, label, quiet=True)
        looks_like_path = (raw.startswith((".", "/", "~")) or given.is_absolute()
                           or (first is not None and first[1]))
        if looks_like_path:
            self.problem(at, f"{label} {raw!r} does not exist (looked for "
                             f"{resolved}; relative to the suite file)")
            return None
        return raw

    def suite_path(self, raw: str, at: KeyPath, label: str, quiet: bool = False
                   ) -> tuple[Path, bool] | None:
        """``raw`` relative to the suite file, resolved, and whether it exists; None (reported
        unless ``quiet``) when no file system could hold it: a NUL character, or a name or
        path longer than the system allows (``ValueError``/``OSError`` from ``pathlib``)."""
        try:
            resolved = (self.path.parent / Path(raw).expanduser()).resolve()
            return resolved, resolved.exists()
        except (ValueError, OSError, RuntimeError) as error:
            if not quiet:
                reason = "it holds a NUL character" if "\0" in raw else (
                    getattr(error, "strerror", None) or str(error))
                self.problem(at, f"{label} {_describe(raw)} is not a usable path ({reason}); "
                                 f"write a path relative to the suite file")
            return None

    def model_options(self, value: Any, at: KeyPath, label: str) -> dict[str, Any]:
        """A model's loading options: ``{KEY: VALUE}`` read as ``--t2i-model-option KEY=VALUE``
        (null: a component left out; dtype and enable_model_cpu_offload checked)."""
        mapping = self.mapping(value, at, label)
        if mapping is None:
            return {}
        entries = []
        for key, option in mapping.items():
            if isinstance(option, (dict, list)):
                self.problem((*at, key), f"{label}.{key} must be a single value (a string, "
                                         f"number, true/false or null), got {type(option).__name__}")
                continue
            text = "null" if option is None else str(option).lower() if isinstance(option, bool) \
                else str(option)
            entries.append(f"{key}={text}")
        try:
            return parse_model_options(entries, origin=label)
        except ValueError as error:
            self.problem(at, str(error))
            return {}

    def defaults(self, value: Any) -> SuiteDefaults:
        at = ("defaults",)
        mapping = self.mapping(value, at, "defaults")
        if mapping is None:
            return SuiteDefaults()
        self.keys(mapping, at, DEFAULTS)
        return SuiteDefaults(**{name: self.scalar(mapping, at, DEFAULTS, name)
                                for name in DEFAULTS.names})

    def filter(self, value: Any) -> FilterSpec | None:
        at = ("filter",)
        mapping = self.mapping(value, at, "filter")
        if mapping is None:
            return None
        if not self.keys(mapping, at, FILTER):
            return None
        question = self.scalar(mapping, at, FILTER, "question")
        choices = self.names(mapping["choices"], (*at, "choices"), "filter.choices", minimum=2)
        keep = self.scalar(mapping, at, FILTER, "keep")
        if keep is not None and choices and keep not in choices:
            self.problem((*at, "keep"), f"filter.keep {keep!r} is not one of filter.choices "
                                        f"{list(choices)}")
            return None
        if question is None or keep is None:
            return None
        statements = self.per_choice(mapping, at, "statements", choices, "filter", self.text,
                                     complete=True)
        return FilterSpec(question=question, choices=choices, keep=keep, statements=statements,
                          location=self.location(at))

    def axes(self, value: Any) -> dict[str, AxisSpec]:
        mapping = self.mapping(value, ("axes",), "axes (name -> axis)")
        if mapping is None:
            return {}
        if not mapping:
            self.problem(("axes",), "axes must define at least one axis")
        axes: dict[str, AxisSpec] = {}
        for name, body in mapping.items():
            at = ("axes", name)
            if not (isinstance(name, str) and NAME_PATTERN.fullmatch(name)):
                self.problem(at, f"axis name {name!r} must be a name (letters, digits, _ . -)")
                continue
            self.axis_names.append(name)
            axis = self.axis(name, body, at)
            if axis is not None:
                axes[name] = axis
        return axes

    def axis(self, name: str, value: Any, at: KeyPath) -> AxisSpec | None:
        where = f"axis {name!r}"
        mapping = self.mapping(value, at, where)
        if mapping is None:
            return None
        self.unknown_keys(mapping, at, AXIS.names, f"in {where}")
        parts: tuple[QuestionPart, ...] = ()
        none_value = None
        if "parts" in mapping:
            parts, none_value, choices = self.parts(mapping, at, where)
            question = "; ".join(part.question for part in parts)  # a label for reports
            if "question" in mapping:
                question = self.scalar(mapping, at, AXIS, "question")
            if "choices" in mapping and tuple(mapping["choices"] or ()) != choices:
                self.problem((*at, "choices"), f"{where}: with parts, choices are the part values "
                                               f"then none: leave choices out or write {list(choices)}")
        else:
            if "none" in mapping:
                self.problem((*at, "none"), f"{where}: none is only for multi-part axes (with parts)")
            if not self.missing(mapping, at, AXIS.required, f"in {where}"):
                return None
            question = self.scalar(mapping, at, AXIS, "question")
            choices = self.names(mapping["choices"], (*at, "choices"), f"{where}: choices", minimum=2)
        if question is None or len(choices) < 2:
            return None
        if len(choices) > MAX_CHOICES:
            self.problem((*at, "choices"), f"{where}: {len(choices)} choices, more than the "
                                           f"{MAX_CHOICES} an axis may have")
            return None
        from_llm = self.counterfactuals_from_llm(mapping, at, where)
        return AxisSpec(
            name=name,
            question=question,
            choices=choices,
            counterfactuals=self.per_choice(mapping, at, "counterfactuals", choices, where,
                                            self.template, complete=False)
            if isinstance(mapping.get("counterfactuals"), dict) else {},
            counterfactuals_from_llm=from_llm,
            phrases=self.phrases(mapping, at, choices, where, from_llm),
            ideal=self.ideal(mapping.get("ideal", "uniform"), (*at, "ideal"), choices, where),
            ordered=self.scalar(mapping, at, AXIS, "ordered") or False,
            parts=parts,
            none_value=none_value,
            location=self.location(at),
            statements=self.per_choice(mapping, at, "statements", choices, where, self.text,
                                       complete=True),
            classifier=self.scalar(mapping, at, AXIS, "classifier") or False,
            names=self.names(mapping["names"], (*at, "names"), f"{where}: names")
            if "names" in mapping else (),
            calibration=self.judge_calibration(mapping, at, where),
            abstain_below=self.scalar(mapping, at, AXIS, "abstain_below"),
        )

    def judge_calibration(self, mapping: dict[Any, Any], at: KeyPath, where: str) -> str | None:
        """``judge_calibration: counterfactual | none | <labelled folder>``."""
        if "judge_calibration" not in mapping:
            return None
        value = mapping["judge_calibration"]
        if value in (COUNTERFACTUAL_CALIBRATION, "none"):
            return str(value)
        if isinstance(value, dict) and set(value) == {"folder"} and isinstance(value["folder"], str) \
                and value["folder"].strip():
            found = self.suite_path(value["folder"], (*at, "judge_calibration", "folder"),
                                    f"{where}: judge_calibration.folder")
            return None if found is None else str(found[0])
        self.problem((*at, "judge_calibration"), f"{where}: judge_calibration must be "
                     f"{COUNTERFACTUAL_CALIBRATION} (the axis' counterfactual images), none, or "
                     f"{{folder: <labelled images with index.jsonl>}}, got {_describe(value)}")
        return None

    def parts(self, mapping: dict[Any, Any], at: KeyPath, where: str
              ) -> tuple[tuple[QuestionPart, ...], str | None, tuple[str, ...]]:
        """``parts: [{value, question, statements?}]`` + ``none: value``: choices are the
        values, then none; ``statements: {yes: ..., no: ...}`` serve CLIP-style answerers."""
        parts: list[QuestionPart] = []
        raw = mapping["parts"]
        if not isinstance(raw, list) or not raw:
            self.problem((*at, "parts"), f"{where}: parts must be a non-empty list of "
                                         f"{{value, question}}, got {_describe(raw)}")
            raw = []
        for index, item in enumerate(raw):
            item_at = (*at, "parts", index)
            part = self.mapping(item, item_at, f"{where}: each part")
            if part is None:
                continue
            if not self.keys(part, item_at, PART, f"in a part of {where}"):
                continue
            value = self.scalar(part, item_at, PART, "value")
            question = self.scalar(part, item_at, PART, "question")
            if value is not None and value in [p.value for p in parts]:
                self.problem((*item_at, "value"), f"{where}: part value {value!r} is listed twice")
            elif value is not None and question is not None:
                # A contrastive VQA (CLIP) answers yes/no by comparing two captions.
                statements = self.per_choice(part, item_at, "statements", YES_NO,
                                             f"{where}: part {value!r}", self.text, complete=True)
                parts.append(QuestionPart(value=value, question=question, statements=statements))
        none_value = None
        if "none" not in mapping:
            self.problem((*at, "parts"), f"{where}: a multi-part axis needs none: <value> "
                                         f"for images where no part applies")
        else:
            none_value = self.scalar(mapping, at, AXIS, "none")
            if none_value is not None and none_value in [p.value for p in parts]:
                self.problem((*at, "none"), f"{where}: none {none_value!r} is also a part value")
        values = tuple(part.value for part in parts)
        return tuple(parts), none_value, values + ((none_value,) if none_value else ())

    def counterfactuals_from_llm(self, mapping: dict[Any, Any], at: KeyPath, where: str) -> bool:
        """``counterfactuals: llm``; any other non-mapping is reported here."""
        value = mapping.get("counterfactuals")
        if value == LLM_COUNTERFACTUALS:
            return True
        if "counterfactuals" in mapping and not isinstance(value, dict):
            self.problem((*at, "counterfactuals"),
                         f"{where}: counterfactuals must be a mapping choice -> template or "
                         f"{LLM_COUNTERFACTUALS!r}, got {_describe(value)}")
        return False

    def phrases(self, mapping: dict[Any, Any], at: KeyPath, choices: tuple[str, ...], where: str,
                from_llm: bool) -> dict[str, str]:
        """``phrases: {choice: words}`` for ``counterfactuals: llm`` (default: the choice)."""
        if "phrases" in mapping and not from_llm:
            self.problem((*at, "phrases"), f"{where}: phrases are only used with "
                                           f"counterfactuals: {LLM_COUNTERFACTUALS} (templates "
                                           f"already say how each value is written)")
            return {}
        return self.per_choice(mapping, at, "phrases", choices, where, self.text, complete=False)

    def per_choice(self, mapping: dict[Any, Any], at: KeyPath, key: str, choices: tuple[str, ...],
                   where: str, read: Callable[[Any, KeyPath, str], str | None],
                   complete: bool) -> dict[str, str]:
        """A mapping choice -> text (counterfactuals, statements); ``complete``: every choice."""
        if key not in mapping:
            return {}
        at = (*at, key)
        raw = self.mapping(mapping[key], at, f"{where}: {key} (choice -> text)")
        if raw is None:
            return {}
        self.choice_keys(raw, at, choices, f"{where}: {key}")
        if complete and (absent := [choice for choice in choices if choice not in raw]):
            self.problem(at, f"{where}: {key} must give one for every choice; missing {absent}")
        texts = {}
        for choice, value in raw.items():
            if choice in choices and (text := read(value, (*at, choice), f"{where}: {key}.{choice}")):
                texts[choice] = text
        return texts

    def ideal(self, value: Any, at: KeyPath, choices: tuple[str, ...], where: str) -> Any:
        """"uniform", shares per choice summing to 1 (absent choices get 0), or a reference."""
        if value == "uniform":
            return "uniform"
        usage = '"uniform", a mapping choice -> share summing to 1, or {reference: path}'
        if not isinstance(value, dict):
            self.problem(at, f"{where}: ideal must be {usage}; got {_describe(value)}")
            return "uniform"
        if "reference" in value:
            self.unknown_keys(value, at, ("reference",), f"in {where}: ideal with reference")
            reference = self.text(value["reference"], (*at, "reference"), f"{where}: ideal.reference")
            if reference is None:
                return "uniform"
            found = self.suite_path(reference, (*at, "reference"), f"{where}: ideal.reference")
            if found is None:
                return "uniform"
            folder, exists = found
            if not exists:
                self.problem((*at, "reference"), f"{where}: ideal.reference {reference!r} does not "
                                                 f"exist (looked for {folder}; relative to the suite file)")
            return {"reference": folder}
        self.choice_keys(value, at, choices, f"{where}: ideal")
        shares: dict[str, float] = {}
        for choice, share in value.items():
            if not (_is_number(share) and 0 <= share <= 1):
                self.problem((*at, choice), f"{where}: ideal share of {choice!r} must be a number "
                                            f"in [0, 1], got {_describe(share)}")
            elif choice in choices:
                shares[choice] = float(share)
        if len(shares) == len(value) and not math.isclose(sum(shares.values()), 1.0,
                                                          abs_tol=IDEAL_SUM_TOLERANCE):
            self.problem(at, f"{where}: ideal shares must sum to 1, got {sum(shares.values()):g}")
        return {choice: shares.get(choice, 0.0) for choice in choices}

    # -- checks ------------------------------------------------------------------------------

    def checks(self, value: Any, subjects: tuple[str, ...], axes: dict[str, AxisSpec]
               ) -> tuple[CheckSpec, ...]:
        if not isinstance(value, list):
            self.problem(("checks",), f"checks must be a list of {{id, kind, ...}}, got {_describe(value)}")
            return ()
        checks: list[CheckSpec] = []
        first_line: dict[str, int] = {}
        for index, entry in enumerate(value):
            at = ("checks", index)
            mapping = self.mapping(entry, at, "each check")
            if mapping is None:
                continue
            check_id = self.check_id(mapping, at, first_line)
            check = self.check(mapping, at, check_id or f"checks[{index}]", subjects, axes)
            if check is not None and check_id is not None:
                checks.append(check)
        return tuple(checks)

    def check_id(self, mapping: dict[Any, Any], at: KeyPath, first_line: dict[str, int]) -> str | None:
        if "id" not in mapping:
            self.problem(at, "missing required key 'id' in check (a name for its test items)")
            return None
        check_id = mapping["id"]
        if not (isinstance(check_id, str) and NAME_PATTERN.fullmatch(check_id)):
            self.problem((*at, "id"), f"check id must be a name (letters, digits, _ . -), "
                                      f"got {_describe(check_id)}")
            return None
        line = self.document.line(*at, "id")
        if check_id in first_line:
            self.problem((*at, "id"), f"duplicate check id {check_id!r} "
                                      f"(first at line {first_line[check_id]})")
            return None
        first_line[check_id] = line
        return check_id

    def check(self, mapping: dict[Any, Any], at: KeyPath, check_id: str, subjects: tuple[str, ...],
              axes: dict[str, AxisSpec]) -> CheckSpec | None:
        where = f"check {check_id!r}"
        chosen_subjects = subjects
        if "subjects" in mapping:
            chosen_subjects = self.names(mapping["subjects"], (*at, "subjects"), f"{where}: subjects")
            for index, subject in enumerate(_items(mapping["subjects"])):
                if isinstance(subject, str) and subjects and subject not in subjects:
                    self.problem((*at, "subjects", index),
                                 f"{where}: subject {subject!r} is not in the suite's subjects; "
                                 f"{_suggest(subject, subjects, 'subjects')}")
        marks = self.names(mapping["marks"], (*at, "marks"), f"{where}: marks") \
            if "marks" in mapping else ()
        for index, mark in enumerate(_items(mapping.get("marks"))):
            if isinstance(mark, str) and not MARKER_PATTERN.fullmatch(mark):
                self.problem((*at, "marks", index), f"{where}: mark {mark!r} must be a marker "
                                                    f"name (a Python identifier not starting with _)")
        kind = self.kind(mapping, at, where)
        if kind is None:
            return None
        values = self.params(mapping, at, where, kind)
        if values is None:
            return None
        if values.get("confidence") is None and self.confidence is not None:
            values["confidence"] = self.confidence
        return CheckSpec(
            id=check_id,
            kind=kind.name,
            params=build(kind.params, values),
            axes=_expanded_axes(kind, values, axes),
            subjects=chosen_subjects,
            location=self.location(at),
            marks=marks,
        )

    def kind(self, mapping: dict[Any, Any], at: KeyPath, where: str) -> CheckKind | None:
        if "kind" not in mapping:
            self.problem(at, f"missing required key 'kind' in {where}; known kinds: {_known_kinds()}")
            return None
        name = mapping["kind"]
        if isinstance(name, str) and name in CHECK_KINDS:
            return CHECK_KINDS[name]
        hint = ""
        if isinstance(name, str) and (close := difflib.get_close_matches(name, CHECK_KINDS, n=1)):
            hint = f"did you mean {close[0]!r}? "
        self.problem((*at, "kind"), f"{where}: unknown check kind {name!r}; {hint}"
                                    f"known kinds: {_known_kinds()}")
        return None

    def params(self, mapping: dict[Any, Any], at: KeyPath, where: str, kind: CheckKind
               ) -> dict[str, Any] | None:
        """The kind's parameters by key: required, typed, checked; absent ones take their
        default (``kinds._params.build`` makes them the kind's ``Params``)."""
        declared = {param.name: param for param in (*COMMON_PARAMS, *kind.declared)}
        before = len(self.problems)
        self.unknown_keys(mapping, at, (*CHECK.names, *declared), f"in {where} ({kind.name})")
        params: dict[str, Any] = {}
        for param in declared.values():
            param_at = (*at, param.name)
            if param.name not in mapping:
                if param.required:
                    self.problem(at, f"{where}: missing required key {param.name!r} for kind "
                                     f"{kind.name}" + (f" ({param.doc})" if param.doc else ""))
                params[param.name] = param.default
                continue
            value = mapping[param.name]
            if not _has_type(value, param.types):
                self.problem(param_at, f"{where}: {param.name} must be {_type_words(param.types)}, "
                                       f"got {_describe(value)}")
                continue
            not_finite = _first_not_finite(value)
            if not_finite is not None:
                self.problem(param_at, f"{where}: {param.name} must hold finite numbers, got "
                                       f"{not_finite}")
                continue
            if isinstance(value, int) and not isinstance(value, bool) and float in param.types \
                    and int not in param.types:
                value = float(value)
            if param.check is not None:
                try:
                    rejection = param.check(value)
                except (TypeError, ValueError) as exc:
                    rejection = f"is not valid: {exc}"
                if rejection:
                    self.problem(param_at, f"{where}: {param.name} {rejection}")
                    continue
            if param.names_axes:
                self.axis_references(value, param_at, where, param.name)
            if param.check_with_axes is not None and self.axis_names:
                axes = self.declared_axes
                if all(name in axes for name in self.axis_names):
                    rejection = param.check_with_axes(value, axes)
                    if rejection:
                        self.problem(param_at, f"{where}: {param.name} {rejection}")
                        continue
            params[param.name] = value
        return params if len(self.problems) == before else None

    def axis_references(self, value: Any, at: KeyPath, where: str, key: str) -> None:
        if isinstance(value, dict):  # keyed by axis (InterMit priority): check the keys
            value = list(value)
            if not value:
                self.problem(at, f"{where}: {key} must name at least one axis")
            for name in value:
                self.axis_references(name, (*at, name), where, key)
            return
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        seen: set[str] = set()
        for index, name in enumerate(names):
            name_at = at if isinstance(value, str) else (*at, index)
            if not isinstance(name, str):
                self.problem(name_at, f"{where}: {key} must name axes, got {_describe(name)}")
            elif name in seen:
                self.problem(name_at, f"{where}: {key} lists axis {name!r} twice")
            elif self.axis_names and name not in self.axis_names:
                self.problem(name_at, f"{where}: {key} names unknown axis {name!r}; "
                                      f"{_suggest(name, self.axis_names, 'axes')}")
            if isinstance(name, str):
                seen.add(name)
        if isinstance(value, list) and not value:
            self.problem(at, f"{where}: {key} must name at least one axis")


def _expanded_axes(kind: CheckKind, params: dict[str, Any], axes: dict[str, AxisSpec]
                   ) -> tuple[str, ...]:
    """The axes a check's items expand over: its ``axes_param`` value, or every axis."""
    if kind.axes_param is None:
        return ()
    value = params.get(kind.axes_param)
    if value is None:
        return tuple(axes)
    return (value,) if isinstance(value, str) else tuple(value)


def _known_kinds() -> str:
    return ", ".join(sorted(CHECK_KINDS)) or "(none registered)"


def _suggest(word: str, options: Iterable[Any], noun: str = "expected one of") -> str:
    """A did-you-mean (difflib) followed by the full list of what would be accepted."""
    options = [str(option) for option in options]
    listing = f"{noun}: {', '.join(options)}"
    close = difflib.get_close_matches(word, options, n=1)
    return f"did you mean {close[0]!r}? ({listing})" if close else listing


def _first_not_finite(value: Any) -> str | None:
    """The first NaN or infinite number inside ``value`` (a number, list or mapping), shown
    as YAML writes it; None if every number is finite. ``threshold: .inf`` would pass any
    figure, ``priority: {gender: .nan}`` make tau NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _first_not_finite(item)
        if found is not None:
            return found
    return None


def _at_check(reader: _SuiteReader, check: CheckSpec) -> KeyPath:
    """The key path of ``check`` in the suite's ``checks`` list (its line for errors)."""
    data = reader.document.data.get("checks") if isinstance(reader.document.data, dict) else None
    for index, entry in enumerate(data or ()):
        if isinstance(entry, dict) and entry.get("id") == check.id:
            return ("checks", index)
    return ("checks",)


def _items(value: Any) -> list[Any]:
    """``value`` if it is a list, else nothing (its type error is reported elsewhere)."""
    return value if isinstance(value, list) else []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _has_type(value: Any, types: tuple[type, ...]) -> bool:
    """``isinstance`` that keeps booleans out of numbers (``threshold: true`` is a mistake) and
    lets an integer stand for a float (``tolerance: 0``)."""
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types) or (isinstance(value, int) and float in types)


_TYPE_WORDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               list: "a list", tuple: "a list", dict: "a mapping"}


def _type_words(types: tuple[type, ...]) -> str:
    words = [_TYPE_WORDS.get(t, t.__name__) for t in types]
    if "a number" in words and "an integer" in words:
        words.remove("an integer")
    return " or ".join(dict.fromkeys(words))


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) <= 60 else f"a string of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
