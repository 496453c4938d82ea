"""Who judged what, under which settings: the run header of the JSON report (and of saved
runs, which ``runs/compare`` checks before comparing figures) and pytest's header lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from .._settings import Settings
    from ..family import Family


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
            "audit": bool(settings.images), "vqa": settings.vqa,
            "classifiers": dict(settings.classifiers), "llm": settings.llm,
            "device": settings.device, "dtype": settings.dtype,
            "images_per_prompt": settings.images_per_prompt, "seed": settings.seed,
            "steps": settings.steps, "guidance": settings.guidance,
            "confidence": settings.confidence, "bootstrap": settings.bootstrap,
            "family": family.policy, "gated_checks": family.size,
            "burden": settings.burden,
            "declared_sampling": {"source": plan.sampling_source, **plan.sampling}
            if plan.sampling_source else None,
        },
    }


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
        lines.append(f"t2ibias: model {settings.model}" + (
            f"; declared sampling {declared} ({plan.sampling_source}; a suite's defaults or "
            f"the command line override it)" if plan.sampling_source else ""))
        # each sampling value and where it came from (#22: backends/own_sampling.py)
        from ..backends.own_sampling import own_sampling_of, sampling_line

        # local files only: the header never waits on the hub (loading reads the rest)
        lines.append(sampling_line(plan, own_sampling_of(settings.model, offline=True))
                     + " (a suite's defaults: win where it sets them)")
    judges = [f"vqa {settings.vqa}"] if settings.vqa else []
    judges += [f"classifier {axis}={model}" for axis, model in settings.classifiers.items()]
    if judges:
        lines.append("t2ibias: judges " + "; ".join(judges))
    return lines


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
