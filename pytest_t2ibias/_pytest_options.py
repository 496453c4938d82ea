"""Command-line options, each also an ini key; the command line wins over the ini file.

The option table and ``Settings`` live in ``_settings`` (no pytest); this is the glue."""

from __future__ import annotations

import errno
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from ._settings import (
    ADAPTIVE_SPENDING,
    BURDENS,
    FAMILY_POLICIES,
    INI_ONLY,
    JUDGE_CORRECTIONS,
    MODEL_DTYPES,
    OPTIONS,
    PROTOCOLS,
    Option,
    Settings,
    parse_loading_options,
    parse_model_options,
)
from .budgets import MAX_IMAGE_SIDE, MAX_IMAGES_PER_PROMPT

_BY_NAME = {option.name: option for option in OPTIONS}


def _parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


OPTION_GROUPS: dict[str, tuple[str, ...]] = {
    "models": ("t2i_model", "t2i_model_option", "t2i_revision", "t2i_baseline_model",
               "t2i_baseline_model_option", "t2i_baseline_revision", "t2i_images", "t2i_device",
               "t2i_dtype", "t2i_offline", "t2i_allow_pickle", "t2i_threads"),
    "generation": ("t2i_images_per_prompt", "t2i_steps", "t2i_guidance", "t2i_height",
                   "t2i_width", "t2i_seed", "t2i_batch_size", "t2i_strict_prompts"),
    "judges and LLMs": ("t2i_vqa", "t2i_vqa_option", "t2i_classifier", "t2i_classifier_option",
                        "t2i_llm", "t2i_llm_option", "t2i_llm_tokens", "t2i_eval_llm",
                        "t2i_judge_correction", "t2i_abstain_below", "t2i_update_locks",
                        "t2i_frozen_locks"),
    "gate and statistics": ("t2i_confidence", "t2i_bootstrap", "t2i_burden", "t2i_protocol",
                            "t2i_family", "t2i_adaptive", "t2i_fixed_n", "t2i_adaptive_max",
                            "t2i_adaptive_spending"),
    "planning and selection": ("t2i_plan", "t2i_power", "t2i_skip", "t2i_only"),
    "reports": ("t2i_json", "t2i_html", "t2i_markdown", "t2i_html_images", "t2i_table_width"),
    "cache": ("t2i_cache_dir", "t2i_cache_remote", "t2i_no_cache", "t2i_refresh"),
    "saved runs": ("t2i_save", "t2i_autosave", "t2i_compare", "t2i_compare_fail",
                   "t2i_compare_incomplete",
                   "t2i_storage"),
}
"""Each option's group in ``--help`` (``t2ibias: models``, ...): 48 options in one group
read as a wall; every option is in exactly one (``tests/plugin/test_pytest_habits.py``)."""


def add_options(parser: pytest.Parser) -> None:
    group_of = {name: title for title, names in OPTION_GROUPS.items() for name in names}
    for option in OPTIONS:
        title = group_of.get(option.name, "other")
        group = parser.getgroup(f"t2ibias {title}", f"text-to-image bias checks: {title}")
        help_text = _with_default(option)
        cli_help = help_text.replace("%", "%%")  # argparse formats option help with %
        if option.flag:
            group.addoption(option.cli, action="store_true", default=None, dest=option.name,
                            help=cli_help)
        elif option.repeatable:
            group.addoption(option.cli, action="append", default=None, dest=option.name,
                            metavar=option.metavar or "AXIS=MODEL", help=cli_help)
        else:
            group.addoption(option.cli, default=None, dest=option.name,
                            metavar=option.metavar or _metavar(option), help=cli_help)
        # Typed ini keys show their type in --help; an unset key reads as None.
        parser.addini(option.name, help_text, type=_ini_type(option), default=None)
    for name, help_text, default in INI_ONLY:
        parser.addini(name, f"{help_text} (default: {default})", type="string", default=default)


def _adaptive(config: pytest.Config) -> bool:
    """Adaptive rounds, the default (issue #46), unless ``--t2i-fixed-n`` (or the ini key
    ``t2i_adaptive`` set false); ``--t2i-adaptive`` with ``--t2i-fixed-n`` is a usage error."""
    fixed_n = bool(get_option(config, "t2i_fixed_n"))
    asked = get_option(config, "t2i_adaptive")
    if fixed_n and asked:
        raise pytest.UsageError("--t2i-fixed-n and --t2i-adaptive ask for opposite designs; "
                                "give one (adaptive is the default)")
    return not fixed_n and asked is not False


def _ini_type(option: Option) -> Literal["bool", "linelist", "int", "float", "string"]:
    if option.flag:
        return "bool"
    if option.repeatable:
        return "linelist"
    if option.convert is int:
        return "int"
    if option.convert is float:
        return "float"
    return "string"


def _metavar(option: Option) -> str:
    if option.convert is int:
        return "N"
    if option.convert is float:
        return "X"
    if option.is_path:
        return "PATH"
    return option.name.removeprefix("t2i_").upper()


def _with_default(option: Option) -> str:
    if option.default is None or option.flag:
        return option.help
    return f"{option.help} (default: {option.default})"


def get_option(config: pytest.Config, name: str) -> Any:
    """The option's value: command line, else ini (paths relative to the ini file), else default.

    A value that cannot be converted is a usage error naming the option and where it was set.
    """
    option = _BY_NAME[name]
    raw = config.getoption(name)
    source = option.cli
    base = Path.cwd()
    if raw is None or raw == []:
        source = f"ini key {name} in {config.inipath}" if config.inipath else f"ini key {name}"
        base = config.inipath.parent if config.inipath else config.rootpath
        try:
            raw = config.getini(name)
        except (ValueError, pytest.UsageError) as exc:  # pytest's conversion of a typed key
            raise pytest.UsageError(f"{source}: {exc}") from None
        if raw is None or raw in ("", []):
            return [] if option.repeatable else option.default
    try:
        if option.flag:
            return raw if isinstance(raw, bool) else _parse_bool(raw)
        if option.repeatable:
            return [str(v) for v in raw]
        value = option.convert(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None
    if option.is_path:
        try:
            value = _resolve_path(value, base)
        except ValueError as exc:
            raise pytest.UsageError(f"{source}: {exc}") from None
    return value


def _resolve_path(value: str, base: Path) -> str:
    """Relative paths that exist resolve against ``base``; anything else (a hub id) stays.
    A value no file system opens (a NUL byte, over-long) is a ``ValueError`` saying so."""
    from .backends._source import path_problem

    problem = path_problem(value)
    if problem is not None:
        raise ValueError(f"{value[:80]!r}{'...' if len(value) > 80 else ''} {problem}")
    candidate = Path(value).expanduser()
    if not candidate.is_absolute() and (base / candidate).exists():
        return str((base / candidate).resolve())
    if not candidate.is_absolute() and len(candidate.parts) > 1 and (base / candidate.parts[0]).is_dir():
        return str((base / candidate).absolute())  # a mistyped local path: named in full later
    return str(candidate) if candidate.is_absolute() or candidate.exists() else value


def _parse_classifiers(config: pytest.Config, entries: list[str]) -> dict[str, str]:
    classifiers: dict[str, str] = {}
    base = config.inipath.parent if config.inipath else config.rootpath
    for entry in entries:
        axis, sep, model = entry.partition("=")
        if not sep or not axis.strip() or not model.strip():
            raise pytest.UsageError(
                f"--t2i-classifier expects AXIS=MODEL (e.g. gender=path/to/model), got {entry!r}"
            )
        try:
            classifiers[axis.strip()] = _resolve_path(model.strip(), base)
        except ValueError as exc:
            raise pytest.UsageError(f"--t2i-classifier={axis.strip()}: {exc}") from None
    return classifiers


def _model_options(config: pytest.Config, name: str = "t2i_model_option") -> dict[str, Any]:
    try:
        return parse_model_options(get_option(config, name),
                                   origin="--" + name.replace("_", "-"))
    except ValueError as exc:
        raise pytest.UsageError(f"{exc} (command line or ini key {name})") from None


def _judge_options(config: pytest.Config, role: str) -> dict[str, Any]:
    name = f"t2i_{role}_option"
    try:
        return parse_loading_options(get_option(config, name), origin=f"--t2i-{role}-option")
    except ValueError as exc:
        raise pytest.UsageError(f"{exc} (command line or ini key {name})") from None


def _revision(config: pytest.Config, options: dict[str, Any], role: str) -> str | None:
    """``--t2i-revision`` (``--t2i-baseline-revision``): one rule with the ``revision``
    loading option, which says the same; the two may not disagree, and a local folder has no
    revisions to pick from (a pin that is silently ignored pins nothing)."""
    prefix = "" if role == "model" else "baseline-"
    revision = get_option(config, f"t2i_{prefix.replace('-', '_')}revision")
    given = options.get("revision")
    if revision is not None and given is not None and given != revision:
        raise pytest.UsageError(
            f"--t2i-{prefix}revision={revision} and --t2i-{prefix}model-option "
            f"revision={given} disagree: give the revision once")
    chosen = revision if revision is not None else given
    model = get_option(config, f"t2i_{prefix.replace('-', '_')}model")
    if chosen is not None and model and Path(model).is_dir():
        raise pytest.UsageError(
            f"--t2i-{prefix}revision={chosen}: --t2i-{prefix}model={model} is a local folder, "
            f"which has no revisions (its files' hashes are its fingerprint); give a hub id, "
            f"or check out that revision into the folder")
    return chosen


def frozen_locks(config: pytest.Config) -> bool:
    """Whether lock files are frozen: ``--t2i-frozen-locks`` or a CI runner (``CI`` set to
    anything but 0/false/no), unless ``--t2i-update-locks`` asks to write them."""
    if get_option(config, "t2i_update_locks"):
        return False
    on_ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    return bool(get_option(config, "t2i_frozen_locks")) or on_ci


def _checked(config: pytest.Config, name: str, *, minimum: float,
             maximum: float | None = None) -> Any:
    """The numeric option ``name``, unset (None) or a finite number in [``minimum``,
    ``maximum``] (``budgets``: images per prompt, pixels a side).

    Zero must not pass for "unset" further down (``images_per_prompt or default``), nor NaN
    or infinity for a number, nor an integer past a float (``math.isfinite`` of one raised
    OverflowError), so out-of-range values stop the run here, naming the option.
    """
    value = get_option(config, name)
    if value is None:
        return None
    finite = isinstance(value, int) or math.isfinite(value)
    if not finite or value < minimum or (maximum is not None and value > maximum):
        kind = "an integer" if isinstance(value, int) else "a finite number"
        bounds = f">= {minimum:g}" if maximum is None else f"in [{minimum:g}, {maximum:,}]"
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:20]}... " \
                                                            f"({len(repr(value))} digits)"
        raise pytest.UsageError(f"{_BY_NAME[name].cli} must be {kind} {bounds}, got {shown}; "
                                f"fix it on the command line or the ini key {name}")
    return value


def _report_path(config: pytest.Config, name: str, what: str, example: str) -> str | None:
    """``--t2i-json``/``--t2i-html``: a directory, a path under a file or a place that cannot
    be written is a usage error now, not a traceback when the run is over."""
    value: str | None = get_option(config, name)
    if value is None:
        return None
    problem = unwritable(Path(value))
    if problem is not None:
        raise pytest.UsageError(
            f"{_BY_NAME[name].cli}={value}: the {what} report cannot be written there: "
            f"{problem}; give a file path in a writable directory, e.g. "
            f"{_BY_NAME[name].cli}={example}")
    return value


def unwritable(path: Path) -> str | None:
    """Why a file cannot be written at ``path`` (as far as can be known before writing),
    with the OS's words for it; None if nothing is known to stop it."""
    if path.is_dir():
        return f"{path} is a directory ({os.strerror(errno.EISDIR)})"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:  # the writer will create the rest
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a directory ({os.strerror(errno.ENOTDIR)})"
    if not os.access(folder, os.W_OK):
        try:
            read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        except (OSError, AttributeError):  # no statvfs (Windows)
            read_only = False
        reason = errno.EROFS if read_only else errno.EACCES
        return f"{folder} cannot be written ({os.strerror(reason)})"
    return None


def _power(value: float) -> float:
    if not 0.5 <= value < 1:
        raise pytest.UsageError(f"--t2i-power must lie in [0.5, 1), got {value}")
    return value


def _storage(config: pytest.Config) -> Path:
    """``--t2i-storage``: relative to the working directory on the command line, to the ini
    file's directory in the ini file (it need not exist yet); default <rootdir>/.t2ibias/runs."""
    given = config.getoption("t2i_storage")
    if given:
        return Path(given).expanduser().absolute()
    in_ini = config.getini("t2i_storage")
    if in_ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / Path(in_ini).expanduser()).absolute()
    return config.rootpath / ".t2ibias" / "runs"


def _baseline_options(config: pytest.Config) -> dict[str, Any]:
    """``--t2i-save``, ``--t2i-autosave``, ``--t2i-compare``, ``--t2i-compare-fail`` and
    ``--t2i-storage``, checked: a bad name or criterion is a usage error before any test runs
    (the saved run itself is looked up when the session starts)."""
    save = get_option(config, "t2i_save")
    compare = get_option(config, "t2i_compare")
    compare_fail = tuple(get_option(config, "t2i_compare_fail"))
    if save is not None or compare_fail:  # the rules load only for a run that uses them
        from .errors import CriterionError, RunError
        from .runs.compare import parse_criteria
        from .runs.saved import check_name

        try:
            if save is not None:
                check_name(save)
            parse_criteria(compare_fail)
        except (RunError, CriterionError) as exc:
            where = "--t2i-compare-fail" if isinstance(exc, CriterionError) else ""
            raise pytest.UsageError(f"{where + ': ' if where else ''}{exc}") from None
    if compare_fail and not compare:
        raise pytest.UsageError(f"--t2i-compare-fail={compare_fail[0]} needs a run to compare "
                                f"with: add --t2i-compare=NAME (or latest)")
    return {"save": save, "autosave": bool(get_option(config, "t2i_autosave")),
            "compare": compare, "compare_fail": compare_fail, "storage": _storage(config),
            "compare_incomplete": bool(get_option(config, "t2i_compare_incomplete"))}


def read_settings(config: pytest.Config) -> Settings:
    settings = _read_settings(config)
    _refuse_missing_models(settings, served=lambda option, model: _served_by_a_hook(
        config, settings, option, model))
    _refuse_unreadable_configs(settings)
    return settings


MODEL_OPTIONS = ("model", "baseline_model", "vqa", "llm", "eval_llm")
_HUB_ID = re.compile(r"[\w.-]+(/[\w.-]+)?")


def _refuse_missing_models(settings: Settings,
                           served: Callable[[str, str], bool] = lambda option, model: False
                           ) -> None:
    """A model path that names no folder is a usage error at startup, in one line (issue
    #36), not an ERROR at the first check after collection: an absolute path (what a
    mistyped local path resolves to) is never a hub id, and offline a relative one that is
    not in the local Hugging Face cache cannot load either. A name a user's
    ``pytest_t2ibias_make_*`` hook serves (``served``) is never refused (issue #47); the
    message says when the refusal is for want of a network."""
    import difflib
    import os

    hub_offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
    offline = settings.offline or hub_offline
    named = [(f"--t2i-{name.replace('_', '-')}", getattr(settings, name)) for name in MODEL_OPTIONS]
    named += [(f"--t2i-classifier={axis}", model) for axis, model in settings.classifiers.items()]
    if settings.images:
        named = [(option, model) for option, model in named if option != "--t2i-model"]
    for option, model in named:
        if not model or Path(model).exists():
            continue
        path = Path(model)
        if not path.is_absolute() and not (offline and _HUB_ID.fullmatch(model)
                                           and not _in_hub_cache(model)):
            continue  # a hub id (or a name a conftest hook makes): loading says what is wrong
        if served(option, model):
            continue  # a conftest's hook makes it (the README's HTTP generator)
        siblings = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
        close = difflib.get_close_matches(path.name, siblings, n=1)
        hint = f"; did you mean {path.parent / close[0]}?" if close else ""
        said = "HF_HUB_OFFLINE is set" if hub_offline and not settings.offline else "--t2i-offline"
        why = "no such folder" if path.is_absolute() else (
            f"no such folder, not a model in the local Hugging Face cache (offline: {said}), "
            "and no pytest_t2ibias_make_* hook makes it")
        raise pytest.UsageError(f"{option}={model}: {why}{hint}")


def _refuse_unreadable_configs(settings: Settings) -> None:
    """A generator folder whose JSON configs cannot be read (``model_index.json``, the
    denoiser's and the VAE's, the header's) is a usage error naming the file, at startup, not
    an INTERNALERROR from the header (issue #47)."""
    from .backends.own_sampling import own_sampling_of
    from .errors import BackendError

    named = [] if settings.images else [("--t2i-model", settings.model)]
    named.append(("--t2i-baseline-model", settings.baseline_model))
    for option, model in named:
        if model and Path(model).is_dir():
            try:
                own_sampling_of(model, offline=True)
            except BackendError as error:
                raise pytest.UsageError(f"{option}={model}: {error}") from None


_HOOK_OF = {"--t2i-model": "generator", "--t2i-baseline-model": "generator",
            "--t2i-vqa": "vqa", "--t2i-llm": "llm", "--t2i-eval-llm": "llm"}


def _served_by_a_hook(config: pytest.Config, settings: Settings, option: str,
                      model: str) -> bool:
    """Whether a user's ``pytest_t2ibias_make_*`` hook makes ``model`` (the built-in
    Hugging Face ones, which would load it, are left out). Asked only of a name about to be
    refused; a hook that raises does not make it."""
    kind = "classifier" if option.startswith("--t2i-classifier=") else _HOOK_OF.get(option)
    if kind is None:
        return False
    name = f"pytest_t2ibias_make_{kind}"
    builtin = config.pluginmanager.get_plugin("t2ibias-builtin-backends")
    hook = config.pluginmanager.subset_hook_caller(name, remove_plugins=[builtin] if builtin else [])
    arguments: dict[str, Any] = {"config": config, "model": model}
    if kind == "generator":
        baseline = option == "--t2i-baseline-model"
        arguments.update(role="baseline" if baseline else "candidate", options=dict(
            settings.baseline_model_options if baseline else settings.model_options))
    elif kind == "classifier":
        arguments["axis"] = option.split("=", 1)[1]
    try:
        return hook(**arguments) is not None
    except Exception:  # a hook that cannot make it: refused with the rest
        return False


def _in_hub_cache(repo_id: str) -> bool:
    """Whether the local Hugging Face cache holds ``repo_id`` (no download, no torch)."""
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:
        return False
    return (Path(HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}").is_dir()


def _read_settings(config: pytest.Config) -> Settings:
    cache_dir = get_option(config, "t2i_cache_dir")
    confidence = get_option(config, "t2i_confidence")
    if not 0.5 <= confidence < 1:
        raise pytest.UsageError(f"--t2i-confidence must lie in [0.5, 1), got {confidence}")
    dtype = str(get_option(config, "t2i_dtype")).strip().lower().removeprefix("torch.")
    if dtype not in ("auto", *MODEL_DTYPES):
        raise pytest.UsageError(f"--t2i-dtype must be auto or one of {', '.join(MODEL_DTYPES)}, "
                                f"got {dtype!r}")
    burden = get_option(config, "t2i_burden")
    if burden not in (None, *BURDENS):
        raise pytest.UsageError(f"--t2i-burden must be {' or '.join(BURDENS)}, got {burden!r}")
    protocol = get_option(config, "t2i_protocol")
    if protocol not in (None, *PROTOCOLS):
        raise pytest.UsageError(f"--t2i-protocol must be {' or '.join(PROTOCOLS)}, got {protocol!r}")
    judge_correction = get_option(config, "t2i_judge_correction")
    if judge_correction not in (None, *JUDGE_CORRECTIONS):
        raise pytest.UsageError(f"--t2i-judge-correction must be one of "
                                f"{', '.join(JUDGE_CORRECTIONS)}, got {judge_correction!r}")
    abstain_below = get_option(config, "t2i_abstain_below")
    if abstain_below is not None and not 0 <= abstain_below < 1:
        raise pytest.UsageError(f"--t2i-abstain-below must lie in [0, 1) (a probability), got "
                                f"{abstain_below!r}")
    family = get_option(config, "t2i_family")
    if family not in FAMILY_POLICIES:
        raise pytest.UsageError(f"--t2i-family must be one of {', '.join(FAMILY_POLICIES)}, "
                                f"got {family!r} (docs/STATISTICS.md)")
    spending = get_option(config, "t2i_adaptive_spending")
    if spending not in ADAPTIVE_SPENDING:
        raise pytest.UsageError(f"--t2i-adaptive-spending must be one of "
                                f"{', '.join(ADAPTIVE_SPENDING)}, got {spending!r} "
                                f"(docs/STATISTICS.md)")
    batch_size = get_option(config, "t2i_batch_size")
    model_options = _model_options(config)
    baseline_model_options = _model_options(config, "t2i_baseline_model_option")
    return Settings(
        model=get_option(config, "t2i_model"),
        baseline_model=get_option(config, "t2i_baseline_model"),
        images=get_option(config, "t2i_images"),
        vqa=get_option(config, "t2i_vqa"),
        classifiers=_parse_classifiers(config, get_option(config, "t2i_classifier")),
        model_options=model_options,
        baseline_model_options=baseline_model_options,
        revision=_revision(config, model_options, "model"),
        baseline_revision=_revision(config, baseline_model_options, "baseline_model"),
        vqa_options=_judge_options(config, "vqa"),
        classifier_options=_judge_options(config, "classifier"),
        llm_options=_judge_options(config, "llm"),
        llm=get_option(config, "t2i_llm"),
        eval_llm=get_option(config, "t2i_eval_llm"),
        device=get_option(config, "t2i_device"),
        dtype=dtype,
        images_per_prompt=_checked(config, "t2i_images_per_prompt", minimum=1,
                                   maximum=MAX_IMAGES_PER_PROMPT),
        steps=_checked(config, "t2i_steps", minimum=1),
        guidance=_checked(config, "t2i_guidance", minimum=0),
        llm_tokens=_checked(config, "t2i_llm_tokens", minimum=1),
        height=_checked(config, "t2i_height", minimum=8, maximum=MAX_IMAGE_SIDE),
        width=_checked(config, "t2i_width", minimum=8, maximum=MAX_IMAGE_SIDE),
        seed=_checked(config, "t2i_seed", minimum=0, maximum=2**63 - 1),
        batch_size=batch_size,
        cache_dir=Path(cache_dir) if cache_dir else config.rootpath / ".t2ibias_cache",
        cache_remote=get_option(config, "t2i_cache_remote"),
        no_cache=get_option(config, "t2i_no_cache"),
        refresh=get_option(config, "t2i_refresh"),
        offline=get_option(config, "t2i_offline"),
        allow_pickle=get_option(config, "t2i_allow_pickle"),
        json=_report_path(config, "t2i_json", "JSON", "report.json"),
        html=_report_path(config, "t2i_html", "HTML", "report.html"),
        markdown=_report_path(config, "t2i_markdown", "Markdown", "summary.md"),
        confidence=confidence,
        bootstrap=_checked(config, "t2i_bootstrap", minimum=1),
        burden=burden,
        protocol=protocol,
        judge_correction=judge_correction,
        abstain_below=abstain_below,
        family=family,
        plan=bool(get_option(config, "t2i_plan")),
        power=_power(get_option(config, "t2i_power")),
        suite_pattern=config.getini("t2i_suite_pattern") or "*.t2i.yaml",
        update_locks=bool(get_option(config, "t2i_update_locks")),
        frozen_locks=frozen_locks(config),
        **_baseline_options(config),
        table_width=_checked(config, "t2i_table_width", minimum=40),
        threads=_checked(config, "t2i_threads", minimum=1),
        html_images=get_option(config, "t2i_html_images"),
        strict_prompts=bool(get_option(config, "t2i_strict_prompts")),
        adaptive=_adaptive(config),
        adaptive_max=get_option(config, "t2i_adaptive_max"),
        adaptive_spending=spending,
        models_from_command_line=frozenset(
            name.removeprefix("t2i_") for name in ("t2i_images", "t2i_model", "t2i_baseline_model")
            if config.getoption(name, None)),
    )
