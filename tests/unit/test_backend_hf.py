"""Loading conventions: device and dtype resolution, from_pretrained kwargs, error messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from pytest_t2ibias import backends
from pytest_t2ibias.backends import (
    BackendError,
    CausalLM,
    DiffusersGenerator,
    resolve_device,
    resolve_dtype,
)
from pytest_t2ibias.backends._fingerprint import looks_like_path
from pytest_t2ibias.backends._hf import dtype_kwarg, pretrained_kwargs
from pytest_t2ibias.testing import make_tiny_causal_lm


def test_all_is_complete():
    # "@py_..." names come from pytest's assertion rewriting of plugin modules
    # The package loads its names on first access (PEP 562): dir() lists them all.
    public = {name for name in dir(backends) if not name.startswith(("_", "@"))}
    modules = {path.stem for path in Path(backends.__file__).parent.glob("[!_]*.py")}
    machinery = {"annotations", "lazy_exports", "TYPE_CHECKING"}
    assert public - modules - machinery == set(backends.__all__)
    assert all(getattr(backends, name) is not None for name in backends.__all__)


def test_auto_device_is_cpu_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(BackendError, match="--t2i-device=cuda: CUDA is not available"):
        resolve_device("cuda")


@pytest.mark.parametrize(("worker", "expected"), [("gw0", 0), ("gw1", 1), ("gw2", 2), ("gw5", 1), ("", 0)])
def test_auto_device_spreads_xdist_workers_over_gpus(monkeypatch, worker, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4 if worker != "gw5" else 2)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    assert resolve_device("auto") == torch.device("cuda", expected)


def test_bad_device_names_the_option():
    with pytest.raises(BackendError, match="--t2i-device=tpu: expected auto, cpu, cuda, cuda:N or mps"):
        resolve_device("tpu")


def test_resolve_dtype():
    cpu = torch.device("cpu")
    assert resolve_dtype("auto", cpu) is torch.float32
    assert resolve_dtype("bfloat16", cpu) is torch.bfloat16
    assert resolve_dtype("fp16", cpu) is torch.float16
    assert resolve_dtype(torch.float16, cpu) is torch.float16
    with pytest.raises(BackendError, match="--t2i-dtype=int8"):
        resolve_dtype("int8", cpu)


def test_pretrained_kwargs_use_dtype_safetensors_and_offline():
    from diffusers import DiffusionPipeline
    from transformers import AutoModel, AutoTokenizer

    # diffusers 0.42 and transformers 5 are installed here: both take ``dtype=``.
    assert dtype_kwarg(DiffusionPipeline) == "dtype"
    assert dtype_kwarg(AutoModel) == "dtype"
    kwargs = pretrained_kwargs(AutoModel, revision="abc", dtype=torch.float16, offline=True)
    assert kwargs == {"local_files_only": True, "revision": "abc", "use_safetensors": True, "dtype": torch.float16}
    assert pretrained_kwargs(AutoModel, allow_pickle=True)["use_safetensors"] is None
    assert pretrained_kwargs(AutoTokenizer, offline=True, weights=False) == {"local_files_only": True}


def test_dtype_kwarg_falls_back_to_torch_dtype_on_old_releases(monkeypatch):
    from diffusers import DiffusionPipeline

    from pytest_t2ibias.backends import _hf

    monkeypatch.setattr(_hf, "_release", lambda package: (0, 30))
    assert dtype_kwarg(DiffusionPipeline) == "torch_dtype"


def test_paths_and_hub_ids_are_told_apart(tmp_path):
    assert looks_like_path(tmp_path)
    assert looks_like_path("./models/sd")
    assert looks_like_path("/no/such/dir")
    assert not looks_like_path("stabilityai/stable-diffusion-2-1")
    assert not looks_like_path("gpt2")


def test_a_missing_path_under_an_existing_directory_is_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fixtures").mkdir()
    assert looks_like_path("fixtures/toy-sdd")  # a typo of a local model, not org/name
    assert not looks_like_path("stabilityai/toy-sdd")
    with pytest.raises(BackendError) as info:
        DiffusersGenerator.from_pretrained("fixtures/toy-sdd", device="cpu", origin="--t2i-model")
    message = str(info.value)
    assert f"no such directory {tmp_path / 'fixtures' / 'toy-sdd'}" in message
    assert "cache" not in message and "--t2i-offline" not in message


def test_hub_hints_name_no_option_the_user_did_not_give(monkeypatch):
    from pytest_t2ibias.backends._hf import loading_errors

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    failure = OSError("Cannot load model org/m: the model is not fully cached locally. "
                      "Please check out the root cause in the stacktrace above.")
    with pytest.raises(BackendError) as info, loading_errors("org/m", kind="pipeline",
                                                             origin="--t2i-model"):
        raise failure
    message = str(info.value)
    assert "--t2i-offline" not in message and "stacktrace" not in message
    assert "hf download org/m" in message
    with pytest.raises(BackendError, match="drop --t2i-offline"), loading_errors(
            "org/m", kind="pipeline", origin="--t2i-model", offline=True):
        raise failure


def test_a_failed_load_is_said_in_full_once_then_briefly():
    from pytest_t2ibias.backends._lazy import _Once

    def load():
        raise BackendError("--t2i-model=x/y: no such directory /w/x/y. Pass an existing "
                           "local directory or a hub id.")

    once = _Once(load)
    with pytest.raises(BackendError, match="Pass an existing"):
        once()
    with pytest.raises(BackendError) as again:
        once()
    assert str(again.value) == ("--t2i-model=x/y: no such directory /w/x/y "
                                "(the first check that needed it said why in full)")


def test_missing_path_is_a_backend_error(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(BackendError) as info:
        DiffusersGenerator.from_pretrained(missing, device="cpu", origin="--t2i-model")
    message = str(info.value)
    assert f"--t2i-model={missing}: no such directory" in message
    assert "hub id" in message


def test_directory_without_model_index_is_not_a_pipeline(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(BackendError, match=r"not a diffusers pipeline directory \(no model_index.json"):
        DiffusersGenerator.from_pretrained(tmp_path, device="cpu")


def test_pickle_only_pipeline_is_refused(tmp_path):
    (tmp_path / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionPipeline"}))
    (tmp_path / "unet").mkdir()
    torch.save({"w": torch.zeros(1)}, tmp_path / "unet" / "diffusion_pytorch_model.bin")
    with pytest.raises(BackendError) as info:
        DiffusersGenerator.from_pretrained(tmp_path, device="cpu", origin="--t2i-baseline-model")
    message = str(info.value)
    expected = f"--t2i-baseline-model={tmp_path}: only pickle weights (unet/diffusion_pytorch_model.bin)"
    assert message.startswith(expected)
    assert "--t2i-allow-pickle" in message


def test_pickle_only_model_loads_when_allowed(tmp_path):
    from safetensors.torch import load_file

    path = make_tiny_causal_lm(tmp_path / "lm")
    state = load_file(path / "model.safetensors")
    (path / "model.safetensors").unlink()
    torch.save(state, path / "pytorch_model.bin")

    with pytest.raises(BackendError, match="only pickle weights"):
        CausalLM.from_pretrained(path, device="cpu", offline=True)
    lm = CausalLM.from_pretrained(path, device="cpu", offline=True, allow_pickle=True)
    assert lm.log_likelihood(["a photo of a doctor"])[0] < 0


def test_library_errors_become_one_readable_error(tmp_path):
    (tmp_path / "model_index.json").write_text("this is not json")
    with pytest.raises(BackendError) as info:
        DiffusersGenerator.from_pretrained(tmp_path, device="cpu", offline=True)
    error = info.value
    assert str(error).startswith(f"--t2i-model={tmp_path}: could not load the diffusers pipeline (")
    assert "Hint:" in str(error)
    # the library's exception is kept for debugging but not chained into the traceback
    assert error.original is not None
    assert error.__cause__ is None and error.__suppress_context__


def test_uncached_hub_id_offline_says_what_to_do():
    with pytest.raises(BackendError) as info:
        DiffusersGenerator.from_pretrained(
            "t2ibias-nobody/not-a-model", revision="v1", device="cpu", offline=True
        )
    message = str(info.value)
    assert "--t2i-model=t2ibias-nobody/not-a-model@v1: not in the local Hugging Face cache" in message
    assert "--t2i-offline" in message


def test_torch_gets_the_free_cpus_shared_among_workers_unless_the_user_chose(monkeypatch):
    """Issue #36: usable CPUs less the busy ones, divided among xdist workers; the option,
    a thread variable or an earlier torch.set_num_threads win."""
    import torch

    from pytest_t2ibias.backends import threads

    choose = threads.choose_threads
    assert choose(None, environ={}, cpus=2, busy=0.0).threads == 2
    assert choose(None, environ={}, cpus=2, busy=1.2).threads == 1  # a busy neighbour
    assert choose(None, environ={}, cpus=8, busy=0.0, workers=2).threads == 4
    assert choose(None, environ={}, cpus=2, busy=5.0, workers=2).threads == 1  # at least one
    assert choose(3, environ={"OMP_NUM_THREADS": "1"}, cpus=2, busy=0).threads == 3
    chosen = choose(None, environ={"OMP_NUM_THREADS": "1"}, cpus=2, busy=0)
    assert chosen.threads is None and "OMP_NUM_THREADS=1" in chosen.header()
    assert choose(None, environ={}, cpus=2, busy=1.0).header() == (
        "t2ibias: torch threads 1 (2 usable CPUs, 1.0 busy; --t2i-threads or OMP_NUM_THREADS "
        "to choose)")

    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_torch_default", lambda: 3)
    try:
        torch.set_num_threads(3)  # torch's default here
        threads.decide(threads.ThreadChoice(1, "test"))
        assert threads.apply() == 1 and torch.get_num_threads() == 1
        assert threads.apply() is None  # once a process
        threads.decide(threads.ThreadChoice(2, "test"))  # torch set by someone: left alone
        assert threads.apply() is None and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_only_transformers_torchvision_fallback_warning_is_dropped_while_a_model_loads(caplog):
    """The PIL twin is the processor we want on CPU (#27): its fallback warning is noise in
    every run's log, and only while a model loads; every other warning stays."""
    import logging

    from pytest_t2ibias.backends._hf import _pil_fallback_quiet

    logger = logging.getLogger("transformers.utils.import_utils")
    fallback = ("`CLIPImageProcessor` requires torchvision (not installed); falling back to "
                "`CLIPImageProcessorPil` for backward compatibility.")
    with caplog.at_level(logging.WARNING, logger="transformers.utils.import_utils"):
        with _pil_fallback_quiet():
            logger.warning(fallback)
            logger.warning("some other trouble")
        logger.warning(fallback)
    assert [r.getMessage() for r in caplog.records] == ["some other trouble", fallback]
