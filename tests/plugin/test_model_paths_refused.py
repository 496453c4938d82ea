"""Issue #47, item 10 (the backends and options side): a model folder whose config is not
JSON, a config that is no regular file, and a model path no file system opens (a NUL byte,
over-long) are clear errors naming the file or the option, never an INTERNALERROR."""

from __future__ import annotations

import json
import os

import pytest

from pytest_t2ibias.backends._source import ModelSource, path_problem
from pytest_t2ibias.errors import BackendError

SUITE = """\
suite: s
prompt: "a photo of a {subject}"
subjects: [nurse]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
checks:
  - {id: c, kind: entropy_below, axes: [gender], threshold: 1.0}
"""


def _pipeline_folder(root, unet_config: str | None):
    """A diffusers folder as far as the header reads it (no weights)."""
    (root / "unet").mkdir(parents=True)
    (root / "model_index.json").write_text(json.dumps({
        "_class_name": "StableDiffusionPipeline", "unet": ["diffusers", "UNet2DConditionModel"]}))
    if unet_config is not None:
        (root / "unet" / "config.json").write_text(unet_config)
    return root


def test_a_unet_config_that_is_not_json_is_a_usage_error_naming_the_file(pytester):
    model = _pipeline_folder(pytester.path / "sd", "{not json")
    pytester.makefile(".t2i.yaml", s=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--t2i-model={model}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --t2i-model={model}: {model / 'unet' / 'config.json'} "
                                 "is not a model config (Expecting property name*); restore the model's file"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_a_config_that_is_a_fifo_is_refused_unread(pytester):
    model = _pipeline_folder(pytester.path / "sd", None)
    os.mkfifo(model / "unet" / "config.json")  # opened, it would wait for a writer forever
    pytester.makefile(".t2i.yaml", s=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--t2i-model={model}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unet/config.json is not a model config (not a regular file (a FIFO)); *"])


def test_a_config_holding_no_object_names_the_file(tmp_path):
    model = _pipeline_folder(tmp_path / "sd", "[1, 2]")
    with pytest.raises(BackendError, match=r"unet/config.json holds a JSON list, not an object"):
        ModelSource.of(str(model)).config("unet/config.json")


@pytest.mark.parametrize("model", ["a" * 5000, "/" + "a/" * 3000, "models/" + "b" * 300])
def test_a_model_path_no_file_system_opens_is_a_usage_error(pytester, model):
    pytester.makefile(".t2i.yaml", s=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--t2i-model={model}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --t2i-model: *bytes long; a * is at most *"])


def test_a_nul_byte_in_an_ini_model_is_a_usage_error(pytester):
    pytester.makefile(".t2i.yaml", s=SUITE)
    pytester.makeini("[pytest]\nt2i_model = x\x00y\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ini key t2i_model*holds a NUL byte*"])


def test_a_suites_model_no_file_system_opens_is_a_backend_error():
    """``models.candidate`` reaches the backends as it is: refused there by name."""
    assert path_problem("org/name") is None
    for model in ("x\0y", "a" * 5000, "m/" + "c" * 256):
        with pytest.raises(BackendError, match=r"^model '.*'(\.\.\.)? (holds a NUL|is \d+ bytes|has a name)"):
            ModelSource.of(model)
