"""Every option of the plugin, as data: the option table and the resolved ``Settings``.

No pytest here: ``_pytest_options`` turns a pytest config into ``Settings``; scripts build them
with ``Settings.standalone``; everything below the pytest glue reads only ``Settings``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEVICE_HELP = ("auto|cpu|cuda|cuda:N|mps; auto: CUDA, else Apple's mps, else cpu; under "
               "pytest-xdist worker i gets GPU i mod n (workers past the GPU count share them)")

FAMILY_POLICIES = ("none", "bonferroni", "holm", "bh")
"""``--t2i-family``: how a run's gated checks share their error (``family.Family``)."""

BURDENS = ("model", "check")
"""Who must prove its case when an interval straddles its limit: ``model`` (it must show it
is within the limit, so inconclusive fails: a release gate) or ``check`` (only proof of bias
fails). Listed once: the option, a suite's and a check's ``burden:``, the schema and
``verdict`` read it here."""
JUDGE_CORRECTIONS = ("on", "full", "off")
"""How shares are corrected for the judge's confusion (``metrics.judge``; docs/STATISTICS.md):
``on`` a labelled folder's calibration fully and counterfactual images' as bounds, ``full``
both fully, ``off`` none (the judge's labels taken as truth)."""
PROTOCOLS = ("gate", "paper")
"""What a check computes (issue #44): ``gate``, the project's defaults (the judge's confusion
corrected, a release gate's statistics), or ``paper``, each kind's paper's own figure as the
paper computed it (the judge's answers as read, fixed n; what else a kind's paper sets is the
kind's ``CheckKind.paper_protocol``), still with an interval and still gated. Listed once: the
option, a suite's and a check's ``protocol:``, the schema and ``plan`` read it here."""
ADAPTIVE_SPENDING = ("obrien_fleming", "pocock", "bonferroni")
"""``--t2i-adaptive-spending``: ``metrics.sequential.SPENDING_FUNCTIONS``, the first the
default (repeated here: the options must not import numpy)."""

AUTO = "auto"
BATCH_ROLES = ("generator", "vqa", "classifier")


ADAPTIVE_KINDS = "<adaptive kinds>"
"""Where a doc names the kinds that sample in rounds: filled in from the registry
(``CheckKind.adaptive``, ``kinds.filled_in``) where the doc is shown, as values know no kinds
(the command line's help stays cheap: it names none)."""


@dataclass(frozen=True)
class BatchSizes:
    """Items a backend's forward pass takes, per role: a number, ``auto`` (sized to the free
    memory of the device, ``backends/_batching.py``) or None (the backend's own default).

    ``--t2i-batch-size=8`` sets the generator's (as before); ``auto`` sizes every role;
    ``generator=auto,vqa=32`` sets roles one by one."""

    generator: int | str = 8
    vqa: int | str | None = None
    classifier: int | str | None = None

    @classmethod
    def parse(cls, text: str) -> BatchSizes:
        text = str(text).strip()
        if "=" not in text:
            size = _batch_size(text, "the batch size")
            return cls(generator=size, vqa=size if size == AUTO else None,
                       classifier=size if size == AUTO else None)
        sizes: dict[str, int | str] = {"generator": 8}
        for part in filter(None, (p.strip() for p in text.split(","))):
            role, _, value = part.partition("=")
            role = role.strip()
            if role not in BATCH_ROLES:
                raise ValueError(f"unknown role {role!r} in {text!r}; roles: "
                                 f"{', '.join(BATCH_ROLES)} (e.g. generator=auto,vqa=32)")
            sizes[role] = _batch_size(value.strip(), role)
        return cls(**sizes)

    def requests(self) -> int:
        """Images the request layer hands the generator at once: its batch, or enough for
        an auto-sized one to fill (it splits them into its own forward passes)."""
        return self.generator if isinstance(self.generator, int) else 64

    def __str__(self) -> str:
        if self == BatchSizes():
            return "8"
        return ",".join(f"{role}={getattr(self, role)}" for role in BATCH_ROLES
                        if getattr(self, role) is not None)


def _batch_size(text: str, what: str) -> int | str:
    if text == AUTO:
        return AUTO
    try:
        size = int(text)
    except ValueError:
        raise ValueError(f"{what}: expected a positive integer or auto, got {text!r}") from None
    if size < 1:
        raise ValueError(f"{what}: expected a positive integer or auto, got {size}")
    return size


def images_shown(text: str) -> int | None:
    """``--t2i-html-images``: a positive number, or ``all`` (None)."""
    if str(text).strip().lower() == "all":
        return None
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise ValueError(f"expected a positive number of images or all, got {text!r}")
    return number


def adaptive_cap(text: str) -> int | float:
    """``--t2i-adaptive-max``: images per prompt (``600``), or a multiple of each check's own
    images_per_prompt (``2x``: twice it)."""
    raw = str(text).strip().lower()
    try:
        value = float(raw[:-1]) if raw.endswith("x") else int(raw)
    except ValueError:
        value = 0
    if not value > 0 or (isinstance(value, float) and value > 100):
        raise ValueError(f"expected images per prompt (600) or a multiple of each check's "
                         f"own (2x), got {text!r}")
    return value


MODEL_DTYPES = ("float32", "fp32", "float16", "fp16", "half", "bfloat16", "bf16")
"""What a ``dtype=`` / ``torch_dtype=`` model option may say (``_hf.resolve_dtype`` reads it)."""


def parse_model_options(entries: list[str] | tuple[str, ...],
                        origin: str = "--t2i-model-option") -> dict[str, Any]:
    """``KEY=VALUE`` strings as ``from_pretrained`` keywords: null/none -> None (a component
    left out, e.g. ``text_encoder_3=null``), true/false -> bool, anything else a string;
    ``dtype``/``torch_dtype`` (one key, ``dtype``) and ``enable_model_cpu_offload`` checked."""
    options: dict[str, Any] = {}
    for entry in entries:
        key, sep, raw = str(entry).partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"{origin} expects KEY=VALUE (e.g. text_encoder_3=null, "
                             f"variant=fp16), got {entry!r}")
        lowered = raw.lower()
        value: Any = {"null": None, "none": None, "true": True, "false": False}.get(lowered, raw)
        if key in ("dtype", "torch_dtype"):
            if lowered.removeprefix("torch.") not in MODEL_DTYPES:
                raise ValueError(f"{origin} {key}={raw}: expected one of {', '.join(MODEL_DTYPES)}")
            key, value = "dtype", lowered.removeprefix("torch.")
        if key == "enable_model_cpu_offload" and not isinstance(value, bool):
            raise ValueError(f"{origin} enable_model_cpu_offload={raw}: expected true or false")
        options[key] = value
    return options


JUDGE_FLAGS = ("trust_remote_code", "load_in_4bit", "load_in_8bit", "low_cpu_mem_usage")
"""Judge and LLM loading options that are true or false (``parse_loading_options``)."""


def parse_loading_options(entries: list[str] | tuple[str, ...], origin: str) -> dict[str, Any]:
    """``--t2i-vqa-option``/``--t2i-classifier-option``/``--t2i-llm-option`` KEY=VALUE strings
    as transformers ``from_pretrained`` keywords: as ``parse_model_options`` reads them, and
    ``trust_remote_code``, ``load_in_4bit``/``load_in_8bit`` (made a ``BitsAndBytesConfig``
    where the model loads) and ``low_cpu_mem_usage`` must be true or false; 4- and 8-bit
    exclude each other."""
    options = parse_model_options(entries, origin=origin)
    for key in JUDGE_FLAGS:
        if key in options and not isinstance(options[key], bool):
            raise ValueError(f"{origin} {key}={options[key]}: expected true or false")
    if options.get("load_in_4bit") and options.get("load_in_8bit"):
        raise ValueError(f"{origin}: load_in_4bit and load_in_8bit exclude each other; pick one")
    if "enable_model_cpu_offload" in options:
        raise ValueError(f"{origin} enable_model_cpu_offload: a pipeline's option; for a "
                         f"transformers model use device_map=auto")
    return options


@dataclass(frozen=True)
class Option:
    name: str
    help: str
    convert: Callable[[str], Any] = str
    default: Any = None
    flag: bool = False
    repeatable: bool = False
    is_path: bool = False
    metavar: str | None = None

    @property
    def cli(self) -> str:
        return "--" + self.name.replace("_", "-")


OPTIONS: tuple[Option, ...] = (
    Option("t2i_model", "generator: HF repo id or local diffusers dir (any DiffusionPipeline)", is_path=True),
    Option("t2i_model_option", "KEY=VALUE for the --t2i-model pipeline's from_pretrained "
           "(repeatable): a component left out (text_encoder_3=null), variant=fp16, "
           "dtype=fp16|bf16 (overrides --t2i-dtype), enable_model_cpu_offload=true (after "
           "loading; needs CUDA)", repeatable=True, metavar="KEY=VALUE"),
    Option("t2i_revision", "the --t2i-model hub revision to load (branch, tag or commit; in the "
           "model's fingerprint and the run header); the same as --t2i-model-option "
           "revision=REV", metavar="REV"),
    Option("t2i_baseline_model", "second generator for baseline-vs-candidate checks", is_path=True),
    Option("t2i_baseline_revision", "the --t2i-baseline-model hub revision to load (as "
           "--t2i-revision)", metavar="REV"),
    Option("t2i_baseline_model_option", "KEY=VALUE for the baseline pipeline's from_pretrained "
           "(repeatable; as --t2i-model-option)", repeatable=True, metavar="KEY=VALUE"),
    Option("t2i_images", "audit a folder of already-generated images instead of generating", is_path=True),
    Option("t2i_vqa", "VQA model: CLIP-style (zero-shot) or generative (BLIP/LLaVA/...)", is_path=True),
    Option("t2i_vqa_option", "KEY=VALUE for the --t2i-vqa model's from_pretrained "
           "(repeatable): trust_remote_code=true, device_map=auto, load_in_4bit=true or "
           "load_in_8bit=true (a BitsAndBytesConfig; needs bitsandbytes and CUDA), "
           "dtype=fp16|bf16, revision=REV, or any other keyword", repeatable=True, metavar="KEY=VALUE"),
    Option("t2i_classifier", "AXIS=ID|PATH image-classification model for one axis (repeatable)",
           repeatable=True),
    Option("t2i_classifier_option", "KEY=VALUE for every --t2i-classifier model's "
           "from_pretrained (repeatable; as --t2i-vqa-option)", repeatable=True,
           metavar="KEY=VALUE"),
    Option("t2i_llm", "causal LM for BGPS search, OpenBias proposals and counterfactuals: llm",
           is_path=True),
    Option("t2i_llm_option", "KEY=VALUE for the --t2i-llm (and --t2i-eval-llm) model's "
           "from_pretrained (repeatable; as --t2i-vqa-option)", repeatable=True,
           metavar="KEY=VALUE"),
    Option("t2i_llm_tokens", "new tokens --t2i-llm may write per reply (default: sized to the "
           "task: an OpenBias JSON list 768, a counterfactual prompt 32; BGPS continuations "
           "keep their own)", int),
    Option("t2i_eval_llm", "a second causal LM: perplexity of the prompts BGPS found (a different "
           "model from --t2i-llm, which searched)", is_path=True),
    Option("t2i_device", DEVICE_HELP, default="auto"),
    Option("t2i_dtype", "auto|float32|float16|bfloat16 (fp32, fp16, half, bf16 too)",
           default="auto"),
    Option("t2i_images_per_prompt", "images generated per prompt (overrides suite defaults)", int),
    Option("t2i_steps", "denoising steps (overrides suite defaults)", int),
    Option("t2i_guidance", "classifier-free guidance scale (overrides suite defaults)", float),
    Option("t2i_height", "image height in pixels (overrides suite defaults; default: the "
           "pipeline's own)", int),
    Option("t2i_width", "image width in pixels (overrides suite defaults; default: the "
           "pipeline's own)", int),
    Option("t2i_seed", "base seed; image i of every prompt uses noise from (seed, i)", int),
    Option("t2i_batch_size", "items per forward pass: N (the generator's), auto (every role "
           "sized to free device memory), or ROLE=N|auto,... for generator, vqa, classifier",
           BatchSizes.parse, default=BatchSizes()),
    Option("t2i_cache_dir", "cache directory (default <rootdir>/.t2ibias_cache)", is_path=True),
    Option("t2i_cache_remote", "a shared cache tier at an fsspec URL (s3://, gs://, file://...): "
           "read through on a local miss, written behind every entry"),
    Option("t2i_no_cache", "bypass the cache: neither read nor write", flag=True),
    Option("t2i_refresh", "recompute everything and overwrite the cache", flag=True),
    Option("t2i_offline", "local_files_only=True everywhere", flag=True),
    Option("t2i_update_locks", "regenerate the suites' counterfactual lock files "
           "(<suite>.t2i.lock.json) with --t2i-llm instead of failing when they are stale",
           flag=True),
    Option("t2i_frozen_locks", "lock files are read, never written: a missing lock file or "
           "entry is an error unless --t2i-update-locks (on by itself when the CI environment "
           "variable is true, as on GitHub and GitLab runners)", flag=True),
    Option("t2i_strict_prompts", "a prompt with words the generator's tokenizer cannot read "
           "(unknown, or past the text encoder's length) is an ERROR, not an inconclusive "
           "check", flag=True),
    Option("t2i_allow_pickle", "allow loading non-safetensors (pickle) weights", flag=True),
    Option("t2i_json", "write a machine-readable report here", is_path=True),
    Option("t2i_html", "write a visual report here", is_path=True),
    Option("t2i_markdown", "write a Markdown summary here (a CI step summary: the tally, the "
           "verdict table failures first, the trade-offs, a link to --t2i-html); given "
           "$GITHUB_STEP_SUMMARY it appends, as GitHub's steps do", is_path=True),
    Option("t2i_html_images", "images of each prompt a check's gallery keeps for the HTML "
           "report: N or all", images_shown, default=8, metavar="N|all"),
    Option("t2i_threads", "torch's intra-op threads in each process (default: the usable "
           "CPUs less those other processes keep busy, divided among xdist workers; "
           "OMP_NUM_THREADS also chooses)", int),
    Option("t2i_table_width", "width of the summary and plan tables (default: the terminal's; "
           "in a file or CI log as wide as the rows, so no name or verdict is split)", int),
    Option("t2i_confidence", "confidence level of every interval", float, default=0.95),
    Option("t2i_bootstrap", "bootstrap resamples (or posterior draws) per interval", int,
           default=1000),
    Option("t2i_burden", f"{'|'.join(BURDENS)}: who must prove its case when an interval "
           "straddles a limit (model: inconclusive fails, the default; check: it passes); "
           "overrides suites"),
    Option("t2i_judge_correction", "on|full|off: correct every share for the judge's measured "
           "confusion (on, the default: a labelled folder's calibration fully, counterfactual "
           "images' as bounds between judge error and the generator's non-adherence; full: "
           "counterfactual calibrations fully too; off: the judge's labels as truth); overrides "
           "suites"),
    Option("t2i_protocol", f"{'|'.join(PROTOCOLS)}: what every check computes (gate, the "
           "default: the judge's confusion corrected, a release gate's statistics; paper: each "
           "kind's paper's own figure on the judge's answers as read, at a fixed n, "
           "docs/paper-departures.md); overrides suites"),
    Option("t2i_abstain_below", "the judge abstains on an image whose most probable answer is "
           "below this probability (counted per prompt, never a share); an axis' "
           "abstain_below overrides it", float),
    Option("t2i_plan", "print every selected check's images, prompts and the images its threshold "
           "needs (power planning), then stop: no model is loaded", flag=True),
    Option("t2i_power", "power --t2i-plan and images_per_prompt: auto plan for", float,
           default=0.9),
    Option("t2i_adaptive", "the default (issue #46): every gated check whose kind can sample "
           "adaptively (the YAML reference's images_per_prompt lists them) draws its images "
           "in rounds (16 per prompt, then doubling) and stops once its interval, valid "
           "under stopping, is decided, or once it will not decide by its cap "
           "(docs/STATISTICS.md); the cap is --t2i-adaptive-max, else the check's "
           "{max: N}, else 1.25 times its images_per_prompt; the ini key set false is "
           "--t2i-fixed-n", flag=True),
    Option("t2i_fixed_n", "draw every check's images_per_prompt in one go and judge once "
           "(the fixed-n design), instead of the default adaptive rounds", flag=True),
    Option("t2i_adaptive_max", "the most images per prompt an adaptive check draws: N, or "
           "Nx, N times the check's images_per_prompt (default: 1.25x, where the cap's "
           "interval is about as wide as fixed n's)",
           adaptive_cap, metavar="N|Nx"),
    Option("t2i_adaptive_spending", "obrien_fleming|pocock|bonferroni: how an adaptive check "
           "spends its alpha over its looks (Lan-DeMets; docs/STATISTICS.md)",
           default="obrien_fleming", metavar="NAME"),
    Option("t2i_family", "none|bonferroni|holm|bh: control of wrong verdicts across the run's "
           "gated checks (bonferroni: each at 1 - (1 - confidence)/m; holm: step-down, the same "
           "guarantee, more decisive; bh: false discovery rate)", default="none"),
    Option("t2i_save", "save this run's figures (the JSON report) under NAME in --t2i-storage, "
           "replacing a run saved under that name", metavar="NAME"),
    Option("t2i_autosave", "save this run under the next free name "
           "NNNN_<git revision>_<UTC date> in --t2i-storage", flag=True),
    Option("t2i_compare", "compare this run's figures with the saved run NAME (a unique prefix "
           "of it, or latest: the last saved)", metavar="NAME|latest"),
    Option("t2i_compare_fail", "fail the session when a figure drifted from the --t2i-compare run: "
           "ci (its interval no longer overlaps the saved one), value:X (moved by more than X), "
           "value:X% (by more than X% of the saved figure); repeatable", repeatable=True,
           metavar="EXPR"),
    Option("t2i_compare_incomplete", "accept as the --t2i-compare baseline a saved run that did "
           "not complete (stopped by -x or Ctrl-C, a crashed worker, collection errors); "
           "refused otherwise", flag=True),
    Option("t2i_storage", "directory of saved runs (default <rootdir>/.t2ibias/runs)",
           is_path=True, metavar="DIR"),
    Option("t2i_skip", "skip every bias check (YAML items and tests that use a t2ibias "
           "fixture), as --benchmark-skip does", flag=True),
    Option("t2i_only", "run only the bias checks, skip every other test (as --benchmark-only)",
           flag=True),
)

INI_ONLY = (
    ("t2i_suite_pattern", "glob of YAML suite files", "*.t2i.yaml"),
)

@dataclass(frozen=True)
class Settings:
    """Every option resolved once per session."""

    model: str | None
    baseline_model: str | None
    images: str | None
    vqa: str | None
    classifiers: dict[str, str]
    llm: str | None
    device: str
    dtype: str
    images_per_prompt: int | None
    steps: int | None
    guidance: float | None
    seed: int | None
    batch_size: BatchSizes
    cache_dir: Path
    no_cache: bool
    refresh: bool
    offline: bool
    allow_pickle: bool
    json: str | None
    html: str | None
    confidence: float
    bootstrap: int
    burden: str | None = None
    protocol: str | None = None
    """``--t2i-protocol``: gate or paper (``PROTOCOLS``); None: the suite's."""
    judge_correction: str | None = None
    """``--t2i-judge-correction``: on, full or off (``metrics.judge``); None: the suite's."""
    abstain_below: float | None = None
    """``--t2i-abstain-below``: the run's abstention floor for every judge."""
    family: str = "none"
    plan: bool = False
    power: float = 0.9
    suite_pattern: str = "*.t2i.yaml"
    update_locks: bool = False
    frozen_locks: bool = False
    markdown: str | None = None
    """``--t2i-markdown``: where the Markdown summary goes (``reports.markdown``)."""
    """``--t2i-frozen-locks`` or ``CI=true``, without ``--t2i-update-locks``: a missing lock
    (file or entry) is an error, never written on a runner that throws it away."""
    cache_remote: str | None = None
    """``--t2i-cache-remote``: an fsspec URL behind the local cache (``_remote_cache``)."""
    eval_llm: str | None = None
    """``--t2i-eval-llm``: the LM that scores found prompts' perplexity (BGPS evaluation)."""
    save: str | None = None
    """``--t2i-save``: the name this run is saved under in ``storage``."""
    autosave: bool = False
    compare: str | None = None
    """``--t2i-compare``: the saved run (name, unique prefix or ``latest``) to compare with."""
    compare_fail: tuple[str, ...] = ()
    """``--t2i-compare-fail`` expressions, as given (``baseline.parse_criterion`` reads them)."""
    compare_incomplete: bool = False
    """``--t2i-compare-incomplete``: a saved run that did not complete may be the baseline."""
    storage: Path = Path(".t2ibias/runs")
    table_width: int | None = None
    threads: int | None = None
    """``--t2i-threads``: torch's threads a process; None: ``backends.threads`` chooses."""
    """``--t2i-table-width``: None draws tables at the terminal's width, or the rows' own."""
    html_images: int | None = 8
    """``--t2i-html-images``: images a prompt in each gallery; None: all of them."""
    adaptive: bool = True
    """Checks that support it sample in rounds and stop once decided (the default, issue
    #46); False: ``--t2i-fixed-n``."""
    adaptive_max: int | float | None = None
    """``--t2i-adaptive-max``: the cap of an adaptive check, images per prompt (int) or a
    multiple of its images_per_prompt (float, from ``2x``); None: its images_per_prompt."""
    adaptive_spending: str = "obrien_fleming"
    """``--t2i-adaptive-spending``: the alpha-spending function over an adaptive check's looks
    (``metrics.sequential.SPENDING_FUNCTIONS``)."""
    strict_prompts: bool = False
    """``--t2i-strict-prompts``: unread words in a prompt are an error, not inconclusive."""
    llm_tokens: int | None = None
    """``--t2i-llm-tokens``: the LLM's reply budget; None: each task's own (``PROPOSAL_TOKENS``)."""
    height: int | None = None
    """``--t2i-height``: pixels; None: the suite's, the model's declaration, the pipeline's own."""
    width: int | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    """``--t2i-model-option``: keywords for the candidate pipeline's ``from_pretrained``
    (``parse_model_options``); empty: none, and no change to any cache key."""
    baseline_model_options: dict[str, Any] = field(default_factory=dict)
    """``--t2i-baseline-model-option``: the same, for the baseline pipeline."""
    revision: str | None = None
    """``--t2i-revision``: the candidate's hub revision (``plan._loading`` makes it the
    ``revision`` loading option; the two may not disagree)."""
    baseline_revision: str | None = None
    """``--t2i-baseline-revision``: the baseline's."""
    vqa_options: dict[str, Any] = field(default_factory=dict)
    """``--t2i-vqa-option``: keywords for the judge's ``from_pretrained``
    (``parse_loading_options``); empty: none, and no change to any cache key."""
    classifier_options: dict[str, Any] = field(default_factory=dict)
    """``--t2i-classifier-option``: the same, for every classifier."""
    llm_options: dict[str, Any] = field(default_factory=dict)
    """``--t2i-llm-option``: the same, for the LLMs (``--t2i-llm``, ``--t2i-eval-llm``)."""
    skip: bool = False
    """``--t2i-skip``: every bias check skipped (``plugin.pytest_collection_modifyitems``)."""
    only: bool = False
    """``--t2i-only``: every other test skipped."""
    models_from_command_line: frozenset[str] = frozenset()
    """Model options given on the command line (``model``, ``baseline_model``, ``images``);
    they win over a suite's ``models:``, which wins over the ini file."""

    @classmethod
    def standalone(cls, **overrides: Any) -> Settings:
        """Settings outside pytest: every option's default, then ``overrides`` by field name."""
        values: dict[str, Any] = {
            option.name.removeprefix("t2i_"): ([] if option.repeatable else option.default)
            for option in OPTIONS
        }
        values["classifiers"] = values.pop("classifier")
        values.pop("fixed_n")  # adaptive=False
        values["model_options"] = parse_model_options(values.pop("model_option"))
        values["baseline_model_options"] = parse_model_options(
            values.pop("baseline_model_option"), origin="--t2i-baseline-model-option")
        for role in ("vqa", "classifier", "llm"):
            values[f"{role}_options"] = parse_loading_options(
                values.pop(f"{role}_option"), origin=f"--t2i-{role}-option")
        values.update(no_cache=False, refresh=False, offline=False, allow_pickle=False,
                      strict_prompts=False, adaptive=True, skip=False, only=False,
                      frozen_locks=False,
                      update_locks=False, cache_dir=Path(".t2ibias_cache"), classifiers={},
                      autosave=False, compare_fail=(), storage=Path(".t2ibias/runs"))
        unknown = set(overrides) - set(cls.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown settings {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}")
        values.update(overrides)
        values["cache_dir"] = Path(values["cache_dir"])
        values["storage"] = Path(values["storage"])
        values["compare_fail"] = tuple(values["compare_fail"])
        return cls(**values)
