"""Hugging Face habits (issue #43): a hub revision pinned and in the fingerprint and the header,
``fp16``/``bf16``/``half`` wherever a dtype is, ``mps`` in ``auto``, judges' loading options
(``--t2i-vqa-option``...) reaching ``from_pretrained``, the xdist sharing rule said, and the
run header naming the device used and the libraries' versions.

The two revisions live in huggingface_hub's own cache layout, built offline in a temp dir
(``models--acme--tiny-sd/refs/<name>`` -> a commit, ``snapshots/<commit>/`` its files)."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest
from support.tiny_models import import_every_class

from pytest_t2ibias._settings import Settings, parse_loading_options
from pytest_t2ibias.errors import BackendError

import_every_class()  # before pytester's in-process runs (see there)

HUB_ID = "acme/tiny-sd"
V1 = "1" * 40
MAIN = "2" * 40


@pytest.fixture
def hub_cache(tmp_path, model_zoo, monkeypatch):
    """A local hub cache holding ``acme/tiny-sd`` at two revisions with different weights:
    ``v1`` (the zoo's tiny SD) and ``main`` (the same architecture, another seed)."""
    from huggingface_hub import constants

    from pytest_t2ibias.testing import make_tiny_pipeline

    root = tmp_path / "hub"
    repo = root / f"models--{HUB_ID.replace('/', '--')}"
    shutil.copytree(model_zoo["sd"], repo / "snapshots" / V1)
    make_tiny_pipeline(repo / "snapshots" / MAIN, seed=1)
    (repo / "refs").mkdir()
    (repo / "refs" / "v1").write_text(V1)
    (repo / "refs" / "main").write_text(MAIN)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))
    return root


def test_a_revision_pins_the_weights_and_the_fingerprint(hub_cache):
    from pytest_t2ibias.backends import _lazy
    from pytest_t2ibias.backends.generator import DiffusersGenerator
    from pytest_t2ibias.plan import plan_for

    pinned = Settings.standalone(model=HUB_ID, revision="v1", device="cpu", offline=True,
                                 baseline_model=HUB_ID, baseline_revision="main")
    options = plan_for(pinned).options("candidate")
    assert options == {"revision": "v1"}
    assert plan_for(pinned).options("baseline") == {"revision": "main"}
    at_v1 = _lazy.lazy_generator(HUB_ID, pinned, origin="--t2i-model", options=options)
    at_main = _lazy.lazy_generator(HUB_ID, pinned, origin="--t2i-model",
                                   options={"revision": "main"})
    assert at_v1.source.fingerprint == f"hub:{HUB_ID}@{V1}"
    assert at_main.source.fingerprint == f"hub:{HUB_ID}@{MAIN}"
    assert at_v1.fingerprint != at_main.fingerprint

    # revision=main as a model option: the revision loaded, no "multiple values" TypeError
    loaded = {name: DiffusersGenerator.from_pretrained(HUB_ID, device="cpu", offline=True,
                                                       model_options={"revision": name})
              for name in ("v1", "main")}
    assert loaded["v1"].model_fingerprint == f"hub:{HUB_ID}@{V1}"
    weights = {name: next(g.pipeline.unet.parameters()).detach().clone()
               for name, g in loaded.items()}
    assert not bool((weights["v1"] == weights["main"]).all())


SUITE = """\
suite: tiny
defaults: {images_per_prompt: 2, seed: 0, steps: 2}
prompt: "a photo of a {subject}"
subjects: [doctor]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
checks:
  - {id: balance, kind: entropy_below, axes: [gender], threshold: 1.0}
"""


@pytest.fixture
def project(pytester, model_zoo, tmp_path):
    pytester.makefile(".t2i.yaml", tiny=SUITE)
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_vqa = {model_zoo['clip']}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 50
        t2i_height = 16
        t2i_width = 16
    """))
    return pytester


def _run_header(project, *args):
    report = project.path / "report.json"
    result = project.runpytest("-p", "no:cacheprovider", "--t2i-offline", f"--t2i-json={report}",
                               *args)
    return result, json.loads(report.read_text())["run"]


def test_the_revision_options_reach_the_header_and_the_cache_key(project, hub_cache):
    result, pinned = _run_header(project, f"--t2i-model={HUB_ID}", "--t2i-revision=v1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"t2ibias: model {HUB_ID} (loaded with revision=v1)*"])
    assert pinned["settings"]["revision"] == "v1"

    result, main = _run_header(project, f"--t2i-model={HUB_ID}", "--t2i-model-option=revision=main")
    result.assert_outcomes(passed=1)
    assert main["settings"]["revision"] == "main"
    [generator_v1], [generator_main] = pinned["models"], main["models"]
    assert generator_v1["fingerprint"] != generator_main["fingerprint"]

    refused = project.runpytest("-p", "no:cacheprovider", f"--t2i-model={HUB_ID}",
                                "--t2i-revision=v1", "--t2i-model-option=revision=main")
    refused.stderr.fnmatch_lines(["*--t2i-revision=v1 and --t2i-model-option revision=main "
                                  "disagree*"])


def test_a_revision_for_a_local_folder_is_refused(project, model_zoo):
    result = project.runpytest("-p", "no:cacheprovider", f"--t2i-model={model_zoo['sd']}",
                               "--t2i-revision=v1")
    result.stderr.fnmatch_lines(["*--t2i-revision=v1: --t2i-model=* is a local folder, which has "
                                 "no revisions*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("spelling", ["fp16", "half", "bf16", "torch.float16"])
def test_short_dtype_names_are_accepted_on_the_command_line(project, spelling):
    result = project.runpytest("-p", "no:cacheprovider", "--t2i-plan", f"--t2i-dtype={spelling}")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()


def test_auto_picks_mps_when_there_is_no_cuda(monkeypatch):
    import torch

    from pytest_t2ibias.backends._hf import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("mps")
    assert resolve_device("mps") == torch.device("mps")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(BackendError, match="--t2i-device=mps: Apple's mps device is not available"):
        resolve_device("mps")


def test_judge_options_parse_and_quantization_goes_through_transformers_config():
    from transformers import BitsAndBytesConfig

    from pytest_t2ibias.backends._hf import model_kwargs, processor_kwargs

    options = parse_loading_options(["trust_remote_code=true", "device_map=auto",
                                     "load_in_4bit=true", "torch_dtype=bf16"], "--t2i-vqa-option")
    assert options == {"trust_remote_code": True, "device_map": "auto", "load_in_4bit": True,
                       "dtype": "bf16"}
    kwargs = model_kwargs(options, origin="--t2i-vqa")
    assert "load_in_4bit" not in kwargs and kwargs["device_map"] == "auto"
    assert isinstance(kwargs["quantization_config"], BitsAndBytesConfig)
    assert kwargs["quantization_config"].load_in_4bit
    assert processor_kwargs(options) == {"trust_remote_code": True}
    with pytest.raises(ValueError, match="trust_remote_code=maybe: expected true or false"):
        parse_loading_options(["trust_remote_code=maybe"], "--t2i-vqa-option")
    with pytest.raises(ValueError, match="load_in_4bit and load_in_8bit exclude each other"):
        parse_loading_options(["load_in_4bit=true", "load_in_8bit=true"], "--t2i-llm-option")


@pytest.fixture
def from_pretrained_calls(monkeypatch):
    """Every keyword ``transformers.AutoModel.from_pretrained`` is called with (the CLIP
    judge's loader), the call then going through."""
    import transformers

    calls: list[dict] = []
    original = transformers.AutoModel.from_pretrained

    def spy(*args, **kwargs):
        calls.append(dict(kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", spy)
    return calls


def test_a_judge_option_on_the_command_line_reaches_from_pretrained(project, model_zoo,
                                                                    from_pretrained_calls):
    result, run = _run_header(project, f"--t2i-model={model_zoo['sd']}",
                              "--t2i-vqa-option=trust_remote_code=true",
                              "--t2i-vqa-option", "low_cpu_mem_usage=true")
    result.assert_outcomes(passed=1)
    [call] = from_pretrained_calls
    assert call["trust_remote_code"] is True and call["low_cpu_mem_usage"] is True
    assert run["settings"]["vqa_options"] == {"trust_remote_code": True, "low_cpu_mem_usage": True}
    result.stdout.fnmatch_lines(["t2ibias: judges vqa * (loaded with trust_remote_code=True, "
                                 "low_cpu_mem_usage=True)*"])


def test_a_quantized_judge_is_asked_for_through_bitsandbytes_config(project, model_zoo,
                                                                    from_pretrained_calls):
    from transformers import BitsAndBytesConfig

    result = project.runpytest("-p", "no:cacheprovider", f"--t2i-model={model_zoo['sd']}",
                               "--t2i-vqa-option=load_in_8bit=true")
    [call] = from_pretrained_calls
    assert isinstance(call["quantization_config"], BitsAndBytesConfig)
    assert call["quantization_config"].load_in_8bit and "load_in_8bit" not in call
    # on a CPU without bitsandbytes the load fails, as an ERROR row saying why, not a traceback
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("errors", 0) == 1
    result.stdout.no_fnmatch_line("*Traceback*")


def test_judge_options_enter_the_judges_cache_key_only_when_set(model_zoo):
    from pytest_t2ibias.backends._lazy import lazy_answerer

    model = str(model_zoo["clip"])
    plain = lazy_answerer(model, Settings.standalone(device="cpu"), origin="--t2i-vqa")
    same = lazy_answerer(model, Settings.standalone(device="cpu"), origin="--t2i-vqa")
    quantized = lazy_answerer(model, Settings.standalone(
        device="cpu", vqa_options={"load_in_4bit": True}), origin="--t2i-vqa")
    assert plain.fingerprint == same.fingerprint != quantized.fingerprint


def test_the_run_header_names_the_device_used_and_the_libraries(project, model_zoo):
    from importlib.metadata import version

    result, run = _run_header(project, f"--t2i-model={model_zoo['sd']}")
    result.assert_outcomes(passed=1)
    environment = run["environment"]
    assert environment["torch"] == version("torch")
    assert environment["diffusers"] == version("diffusers")
    assert environment["transformers"] == version("transformers")
    assert environment["python"].count(".") == 2
    assert environment["devices"] == ["cpu"] and environment["gpus"] == []
    assert {entry.get("device") for entry in run["models"] + run["judges"]} == {"cpu"}
    result.stdout.fnmatch_lines([f"t2ibias: python *, torch {version('torch')}, diffusers *, "
                                 f"transformers *"])

    # a warm run loads nothing: no device is claimed
    result, warm = _run_header(project, f"--t2i-model={model_zoo['sd']}")
    assert warm["environment"]["devices"] == []


def test_more_workers_than_gpus_share_them_and_the_header_says_so():
    from pytest_t2ibias.reports.header import gpu_sharing_line

    line = gpu_sharing_line(4, "auto", 1)
    assert line is not None and "4 xdist workers share 1 GPU(s)" in line and "-n 1" in line
    assert gpu_sharing_line(2, "auto", 2) is None
    assert gpu_sharing_line(4, "auto", 0) is None
    assert gpu_sharing_line(4, "cuda:0", 1) is None
