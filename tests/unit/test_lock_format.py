"""Every lock file reads, checks its version and is written through one format
(``locks._file.LockFormat``), and finds its LLM stale by one rule (``llm_changed``)."""

from __future__ import annotations

import json

import pytest

from pytest_t2ibias.errors import LockfileError
from pytest_t2ibias.locks import bgps, counterfactual, openbias
from pytest_t2ibias.locks._file import llm_changed

FORMATS = {"counterfactual": counterfactual.FORMAT, "BGPS": bgps.FORMAT, "OpenBias": openbias.FORMAT}


@pytest.mark.parametrize("name", FORMATS)
def test_each_lock_refuses_another_version_and_bad_json_in_the_same_words(name, tmp_path):
    form = FORMATS[name]
    path = tmp_path / "x.t2i.lock.json"
    assert form.read(path) is None  # none yet
    path.write_text(json.dumps({form.version_key: form.version + 1}))
    with pytest.raises(LockfileError, match=rf"not a {name} lock file \({form.version_key} is "
                                            rf"{form.version + 1}, this plugin reads {form.version}\)"):
        form.read(path)
    path.write_text('{\n  "oops": 1,\n}')  # a trailing comma, found on line 3
    with pytest.raises(LockfileError, match=rf"x.t2i.lock.json:3: {name} lock file is not valid JSON"):
        form.read(path)


def test_an_empty_record_reads_back_where_its_shape_allows(tmp_path):
    path = tmp_path / "x.t2i.bgps.lock.json"
    bgps.FORMAT.write(path, bgps.FORMAT.new(suite="x.t2i.yaml", gates={}))
    assert bgps.FORMAT.read(path)["gates"] == {}
    openbias.FORMAT.write(path, openbias.FORMAT.new(entries={}))
    assert openbias.FORMAT.read(path)["version"] == openbias.LOCK_VERSION
    counterfactual.FORMAT.write(path, counterfactual.FORMAT.new())
    with pytest.raises(LockfileError, match=r"'prompt' missing"):
        counterfactual.FORMAT.read(path)


def test_a_lock_stands_for_its_llm_unless_another_is_given(tmp_path):
    assert llm_changed(None, "sha256:abc", "toy-lm") is None
    weights = tmp_path / "other-lm"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"other")
    said = llm_changed(str(weights), "sha256:abc", "toy-lm")
    assert said is not None and said.startswith(f"--t2i-llm {weights} (weights ")
    assert said.endswith("is not the LLM that wrote it (toy-lm, weights sha256:abc)")
