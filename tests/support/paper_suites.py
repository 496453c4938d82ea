"""The papers' suites (issue #44) on tiny random-weight models: models whose tokenizers know
every word of the suites, a pytester run of one suite with the models and images per prompt
from the options, and BGPS' paper-size searches shrunk inside the test process."""

from __future__ import annotations

import dataclasses
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "example_suites" / "paper"
SUITES = {"entigen_professions": 2, "entigen_objects": 2, "entigen_nose_piercing": 2,
          "entigen_weddings": 1, "openbias_captions": 2, "intermit_table1": 26,
          "bgps_occupations": 22}
"""Each new paper suite and its checks."""

_BUILT: dict[str, Any] = {}


def paper_models(tmp_path_factory: Any, model_zoo: Any) -> dict[str, Any]:
    """Tiny SD, SDXL and CLIP whose word tokenizers know every word of the paper suites (a
    judge that reads a choice's statement as <unk> is refused at collection), beside the
    zoo's chat LM and GPT-2; built once a session."""
    from pytest_t2ibias import testing

    if not _BUILT:
        words = sorted({w for f in SUITES for w in re.findall(
            r"[a-z]+", (PAPER / f"{f}.t2i.yaml").read_text().lower())} | set(testing.DEFAULT_WORDS))
        root = tmp_path_factory.mktemp("paper-zoo")
        with testing.torch_threads(1):
            _BUILT.update({"sd": testing.make_tiny_pipeline(root / "sd", words=words),
                           "sdxl": testing.make_tiny_sdxl(root / "sdxl", words=words),
                           "clip": testing.make_tiny_clip(root / "clip", words=words)})
        _BUILT.update({"llama-chat": model_zoo["llama-chat"], "gpt2": model_zoo["gpt2"]})
    return _BUILT


def shrink_bgps_searches(monkeypatch: Any) -> None:
    """A paper-size search takes hours even on tiny models: search 1 prompt of 3 tokens with
    beam 2 x expansion 2 and 2 latents, the probe at step 1 (the suite is not edited)."""
    from pytest_t2ibias.kinds import no_bgps_prompt_exceeds as kind

    original = kind.gate_of

    def small(*args: Any, **kwargs: Any) -> Any:
        gate = original(*args, **kwargs)
        settings = dataclasses.replace(gate.settings, prompts=1, beam_size=2, expansion=2,
                                       max_new_tokens=3)
        return dataclasses.replace(gate, settings=settings, latents=2, step_index=1)

    monkeypatch.setattr(kind, "gate_of", small)


def run_paper_suite(pytester: Any, models: dict[str, Any], tmp_path: Path, suite: str,
                    generator: str, *extra: str) -> tuple[Any, Path]:
    """One paper suite copied with its data, run on the tiny models: 2 images a prompt, 2
    steps, 16 px, 50 bootstrap draws; the JSON report's path with the result."""
    for name in ("data", f"{suite}.t2i.yaml"):
        source = PAPER / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, pytester.path / name)
    (pytester.path / "t2ibias.json").write_text("{}")
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 50
    """))
    report = tmp_path / f"{suite}.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-p", "no:randomly", f"--t2i-model={models[generator]}",
        f"--t2i-vqa={models['clip']}", f"--t2i-llm={models['llama-chat']}",
        f"--t2i-eval-llm={models['gpt2']}", "--t2i-images-per-prompt=2", "--t2i-steps=2",
        "--t2i-height=16", "--t2i-width=16", f"--t2i-json={report}", *extra)
    return result, report
