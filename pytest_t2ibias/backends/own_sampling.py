"""The sampling a diffusers pipeline uses when nobody sets it, read from files, without torch.

An audit must run a model at the settings it ships with: Flux-dev's own are 28 steps at
guidance 3.5, SD3's 28 at 7.0, PixArt-alpha's 20 at 4.5, SD 1.x's 50 at 7.5 (one number for
every pipeline audits most of them at settings nobody uses). They are the defaults of the
pipeline class's ``__call__``; its size is ``default_sample_size`` (a constant set in its
``__init__``, Flux's 128) or the denoiser's ``sample_size``, times the VAE's scale factor, as
every text-to-image pipeline computes ``height = height or ...``. The pipeline class is named
in ``model_index.json``; its source is found through diffusers' own import table and read
with ``ast``, so a warm run (every image cached) resolves its keys without importing torch.
A value this cannot find is None: the pipeline's own, resolved when it loads (never guessed).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..plan import Plan
    from ._source import ModelSource

SAMPLING_FIELDS = ("steps", "guidance", "height", "width")
_CALL_PARAMETERS = {"num_inference_steps": "steps", "guidance_scale": "guidance"}
_IMPORT_TABLE = re.compile(r'_import_structure\[\s*"([\w.]+)"\s*\]\s*(?:=|\.extend\(|\+=)\s*\[([^\]]*)\]', re.DOTALL)


@dataclass(frozen=True)
class OwnSampling:
    """A pipeline's own steps, guidance and size (None: not known before it loads)."""

    pipeline: str | None
    steps: int | None = None
    guidance: float | None = None
    height: int | None = None
    width: int | None = None
    where: dict[str, str] = field(default_factory=dict)
    """Per field, what it was read from (shown in the run header)."""

    def value(self, name: str) -> Any:
        return getattr(self, name)


def own_sampling(model_index: dict[str, Any], read_config: Callable[[str], dict[str, Any]]
                 ) -> OwnSampling:
    """The pipeline's own sampling from its ``model_index.json`` and ``read_config(name)``
    (a component's config file as a dict, ``{}`` when absent)."""
    name = model_index.get("_class_name")
    if not isinstance(name, str):
        return OwnSampling(None)
    source = _class_source(name)
    if source is None:
        return OwnSampling(name)
    call_defaults, sample_constant = source
    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    for parameter, field_name in _CALL_PARAMETERS.items():
        if call_defaults.get(parameter) is not None:
            values[field_name] = call_defaults[parameter]
            where[field_name] = f"{name}.__call__ default"
    sample = sample_constant
    sample_from = f"{name}.default_sample_size"
    if sample is None:
        for denoiser in ("unet", "transformer"):
            if denoiser in model_index:
                sample = read_config(f"{denoiser}/config.json").get("sample_size")
                sample_from = f"{denoiser} sample_size"
                break
    vae = read_config("vae/config.json") if "vae" in model_index else {}
    blocks = vae.get("block_out_channels")
    if isinstance(sample, int) and isinstance(blocks, list) and blocks:
        side = sample * 2 ** (len(blocks) - 1)
        values["height"] = values["width"] = side
        where["height"] = where["width"] = f"{name}'s own: {sample_from} x VAE scale"
    return OwnSampling(name, where=where, **values)


def own_sampling_of(model: str | ModelSource, *, offline: bool = False) -> OwnSampling:
    """``own_sampling`` of a local diffusers directory or hub id (JSON files only, each read
    once a source: the scheduler's config is the fingerprint's too)."""
    from ._source import ModelSource

    source = ModelSource.of(model, offline=offline)
    return own_sampling(source.config("model_index.json"), source.config)


@cache
def _class_source(name: str) -> tuple[dict[str, Any], int | None] | None:
    """(``__call__``'s literal defaults, a constant ``self.default_sample_size``) of diffusers'
    pipeline class ``name``, read from its source; None when it cannot be found."""
    spec = importlib.util.find_spec("diffusers")
    if spec is None or not spec.origin:
        return None
    pipelines = Path(spec.origin).parent / "pipelines"
    package = _table(pipelines / "__init__.py").get(name)
    if package is None:
        return None
    module = _table(pipelines / package.replace(".", "/") / "__init__.py").get(name)
    files = ([pipelines / package.replace(".", "/") / f"{module}.py"] if module else
             sorted((pipelines / package.replace(".", "/")).glob("*.py")))
    for file in files:
        try:
            tree = ast.parse(file.read_text())
        except (OSError, SyntaxError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return _call_defaults(node), _sample_constant(node)
    return None


def _table(init: Path) -> dict[str, str]:
    """Class name -> submodule, from a diffusers ``__init__.py``'s ``_import_structure``."""
    try:
        text = init.read_text()
    except OSError:
        return {}
    table: dict[str, str] = {}
    for key, body in _IMPORT_TABLE.findall(text):
        for class_name in re.findall(r'"(\w+)"', body):
            table.setdefault(class_name, key)
    return table


def _call_defaults(cls: ast.ClassDef) -> dict[str, Any]:
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__call__":
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
            pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
            found = {}
            for argument, default in pairs:
                if argument.arg in _CALL_PARAMETERS:
                    try:
                        found[argument.arg] = ast.literal_eval(default)
                    except ValueError:
                        continue
            return found
    return {}


def _sample_constant(cls: ast.ClassDef) -> int | None:
    """``self.default_sample_size = <int>`` in the class's ``__init__`` (Flux's 128); None
    when it is computed (SDXL's and SD3's come from the denoiser's config)."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "default_sample_size" for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
                return node.value.value
            return None
    return None


def sampling_line(plan: Plan, own: OwnSampling) -> str:
    """The run header's account of the sampling: each value and where it came from."""
    parts = []
    for name in SAMPLING_FIELDS:
        chosen = getattr(plan, name)
        if chosen is not None:
            parts.append(f"{name} {chosen} ({plan.sources.get(name, 'set')})")
        elif own.value(name) is not None:
            parts.append(f"{name} {own.value(name)} ({own.where.get(name, 'the pipeline')})")
        else:
            parts.append(f"{name} the pipeline's own (known when it loads)")
    return "t2ibias: sampling " + ", ".join(parts)

