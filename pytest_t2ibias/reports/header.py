"""Who judged what, under which settings: the run header of the JSON report (and of saved
runs, which ``runs/compare`` checks before comparing figures) and pytest's header lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._text import shown

if TYPE_CHECKING:
    from pathlib import Path

    from .._settings import Settings
    from ..family import Family
    from ..suite_spec import Suite


def run_header(settings: Settings, family: Family, backends: list[dict[str, str]],
               root: Path) -> dict[str, Any]:
    """The JSON report's ``run``: plugin and git versions, the date, the backends made
    (``backends``: role, model, fingerprint, from every process) and the settings."""
    import datetime

    from ..plan import plan_for

    seen = {(b["role"], b["model"]): b for b in backends}
    plan = plan_for(settings)
    return {
        "plugin_version": _plugin_version(),
        "git_revision": _git_revision(root),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "models": sorted((b for b in seen.values() if b["role"].startswith("generator")),
                         key=lambda b: (b["role"], b["model"])),
        "judges": sorted((b for b in seen.values() if not b["role"].startswith("generator")),
                         key=lambda b: (b["role"], b["model"])),
        "settings": {
            "model": settings.images or settings.model, "baseline_model": settings.baseline_model,
            "model_options": plan.options("candidate"),
            "baseline_model_options": plan.options("baseline"),
            "revision": plan.options("candidate").get("revision"),
            "baseline_revision": plan.options("baseline").get("revision"),
            "vqa_options": dict(settings.vqa_options),
            "classifier_options": dict(settings.classifier_options),
            "llm_options": dict(settings.llm_options),
            "audit": bool(settings.images), "vqa": settings.vqa,
            "classifiers": dict(settings.classifiers), "llm": settings.llm,
            "device": settings.device, "dtype": settings.dtype,
            "images_per_prompt": settings.images_per_prompt, "seed": settings.seed,
            "steps": settings.steps, "guidance": settings.guidance,
            "confidence": settings.confidence, "bootstrap": settings.bootstrap,
            "family": family.policy, "gated_checks": family.size,
            "burden": settings.burden, "protocol": settings.protocol,
            "declared_sampling": {"source": plan.sampling_source, **plan.sampling}
            if plan.sampling_source else None,
        },
        "environment": environment(seen.values()),
    }


def environment(backends: Any = ()) -> dict[str, Any]:
    """The libraries' versions (read from their metadata: no import) and where the models
    ran: the devices and GPUs the backends made report (``devices``: none on a warm run,
    which loaded no model)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    def installed(package: str) -> str | None:
        try:
            return version(package)
        except PackageNotFoundError:
            return None

    used = sorted({b["device"] for b in backends if b.get("device")})
    gpus = sorted({b["gpu"] for b in backends if b.get("gpu")})
    return {"python": platform.python_version(),
            **{package: installed(package) for package in ("torch", "diffusers", "transformers")},
            "devices": used, "gpus": gpus}


def header_lines(settings: Settings) -> list[str]:
    """pytest's header: the model (and the sampling it declares, ``plan.declared_sampling``)
    or the audited folder, and the judges."""
    lines = []
    if settings.images:
        lines.append(f"t2ibias: auditing images in {settings.images}")
    elif settings.model:
        from ..plan import plan_for

        plan = plan_for(settings)
        declared = ", ".join(f"{k} {v}" for k, v in plan.sampling.items() if v is not None)
        lines.append(f"t2ibias: model {settings.model}" + _options_text(plan.options("candidate")) + (
            f"; declared sampling {declared} ({plan.sampling_source}; a suite's defaults or "
            f"the command line override it)" if plan.sampling_source else ""))
        # each sampling value and where it came from (#22: backends/own_sampling.py)
        from ..backends.own_sampling import own_sampling_of, sampling_line

        # local files only: the header never waits on the hub (loading reads the rest)
        lines.append(sampling_line(plan, own_sampling_of(settings.model, offline=True))
                     + " (a suite's defaults: win where it sets them)")
    if settings.baseline_model:
        from ..plan import plan_for

        lines.append(f"t2ibias: baseline model {settings.baseline_model}"
                     + _options_text(plan_for(settings).options("baseline")))
    judges = [f"vqa {settings.vqa}{_options_text(settings.vqa_options)}"] if settings.vqa else []
    judges += [f"classifier {axis}={model}{_options_text(settings.classifier_options)}"
               for axis, model in settings.classifiers.items()]
    if judges:
        lines.append("t2ibias: judges " + "; ".join(judges))
    if settings.llm and settings.llm_options:
        lines.append(f"t2ibias: llm {settings.llm}{_options_text(settings.llm_options)}")
    if settings.model or settings.images:  # a run with nothing to draw has no design
        lines.append(design_line(settings))
    return [shown(line) for line in lines]  # a path is the user's text: an ESC is shown (#35)


def design_line(settings: Settings) -> str:
    """Which sampling design runs (issue #46): adaptive rounds, the default, or fixed n."""
    if not settings.adaptive:
        return ("t2ibias: sampling design: fixed n (--t2i-fixed-n): every check draws its "
                "images_per_prompt and is judged once")
    from ..metrics.sequential import DEFAULT_CAP_MULTIPLE, FIRST_LOOK

    cap = settings.adaptive_max
    cap_text = (f"{cap} images a prompt" if isinstance(cap, int) else
                f"{cap:g}x its images_per_prompt" if cap is not None else
                f"its own {{max: N}}, else {DEFAULT_CAP_MULTIPLE:g}x its images_per_prompt")
    return (f"t2ibias: sampling design: adaptive (the default; --t2i-fixed-n for fixed n): a "
            f"gated check whose kind can stop early draws rounds of {FIRST_LOOK}, "
            f"{2 * FIRST_LOOK} ... images a prompt up to {cap_text}, alpha spent {settings.adaptive_spending.replace('_', '-')}, "
            f"and stops once decided or once it will not decide by its cap")


def environment_line() -> str:
    """The libraries a run's figures depend on, for pytest's header (the JSON's
    ``environment`` adds the devices the models ran on)."""
    versions = environment()
    return "t2ibias: " + ", ".join(f"{name} {versions[name] or 'not installed'}" for name in
                                   ("python", "torch", "diffusers", "transformers"))


def gpu_sharing_line(workers: int, device: str, gpus: int) -> str | None:
    """The rule when pytest-xdist starts more workers than there are GPUs: they share them,
    worker ``gwK`` on GPU ``K mod gpus`` (``_hf.resolve_device``), each loading its own copy
    of every model; said once in the header so a run that runs out of GPU memory says why.
    None when the rule does not apply (no workers, no GPU, a device chosen by hand)."""
    if workers <= gpus or gpus == 0 or str(device).strip().lower() != "auto":
        return None
    return (f"t2ibias: {workers} xdist workers share {gpus} GPU(s): worker gwK runs on cuda:(K mod "
            f"{gpus}) and loads its own copy of every model; if GPU memory runs out, run "
            f"-n {gpus} or --t2i-device=cpu")


def suite_lines(settings: Settings, suites: list[Suite]) -> list[str]:
    """After collection: each suite whose ``models:`` or ``defaults:`` change the models or
    sampling the header named, with every value and where it came from (the header is
    written before any suite is read)."""
    from ..backends.own_sampling import own_sampling_of, sampling_line
    from ..plan import ROLES, plan_for

    session = plan_for(settings)
    lines = []
    for suite in suites:
        plan = plan_for(settings, suite)
        if settings.images or all(
                (plan.model(role), plan.options(role)) == (session.model(role), session.options(role))
                for role in ROLES) and plan.sampling == session.sampling:
            continue
        models = "; ".join(f"{role} {plan.model(role)}{_options_text(plan.options(role))}"
                           for role in ROLES if plan.model(role))
        sampling = (sampling_line(plan, own_sampling_of(plan.candidate, offline=True))
                    .removeprefix("t2ibias: ") if plan.candidate else "")
        lines.append(f"t2ibias: suite {suite.name} ({suite.path.name}): "
                     + "; ".join(part for part in (models, sampling) if part))
    return [shown(line) for line in lines]


def _options_text(options: dict[str, Any]) -> str:
    """`` (loaded with variant=fp16, text_encoder_3=None)``; empty for none."""
    if not options:
        return ""
    return " (loaded with " + ", ".join(f"{k}={v}" for k, v in options.items()) + ")"


def _plugin_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-t2ibias")
    except PackageNotFoundError:
        return None


def _git_revision(root: Any) -> str | None:
    """``git rev-parse HEAD`` of the rootdir (with ``-dirty`` for local changes), or None."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], check=False, cwd=root,
                              capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               check=False, cwd=root, capture_output=True, text=True, timeout=5)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None
