"""The YAML reference and the suite JSON Schema: generated from the code, committed, and in
agreement with the loader (what the loader accepts the schema accepts; the invalid suites
below are refused by both)."""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from docgen import reference, reference_data
from pytest_t2ibias.kinds import BUILTIN_KINDS, CHECK_KINDS, NUMBER, CheckKind, Param
from pytest_t2ibias.suite import SuiteError, language, load_suite, schema
from pytest_t2ibias.suite._yaml import _Loader, load_yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_SUITES = sorted((ROOT / "example_suites").rglob("*.t2i.yaml"))


@pytest.fixture(scope="module")
def committed_schema() -> dict:
    """The schema as shipped: package data, read the way an installed package is."""
    text = (resources.files("pytest_t2ibias") / "data" / schema.SCHEMA_FILE).read_text("utf-8")
    return json.loads(text)


@pytest.fixture(scope="module")
def validator(committed_schema) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(committed_schema)


def schema_errors(validator: jsonschema.Validator, data: Any) -> list[str]:
    return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
            for error in validator.iter_errors(data)]


def loader_errors(path: Path) -> list[str]:
    try:
        load_suite(path)
    except SuiteError as exc:
        return [str(exc)]
    return []


# -- generated and committed -------------------------------------------------------------------


@pytest.mark.parametrize("path", list(reference.generated_files()), ids=str)
def test_the_committed_file_is_what_the_code_generates(path):
    committed = ROOT / path
    assert committed.is_file(), f"{path} is missing: run {reference.COMMAND}"
    assert committed.read_text(encoding="utf-8") == reference.generated_files()[path], (
        f"{path} is stale (a key, kind or parameter changed): run {reference.COMMAND} "
        f"and commit the result")


def test_the_schema_is_a_valid_2020_12_and_draft_07_schema(committed_schema):
    jsonschema.Draft202012Validator.check_schema(committed_schema)
    jsonschema.Draft7Validator.check_schema(committed_schema)  # what yaml-language-server runs
    assert committed_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_the_schema_knows_every_key_and_kind_of_the_code(committed_schema):
    top = committed_schema["properties"]
    assert list(top) == list(language.TOP.names) and committed_schema["additionalProperties"] is False
    assert committed_schema["required"] == ["prompt", "subjects", "axes"]
    assert list(top["defaults"]["properties"]) == list(language.DEFAULTS.names)
    assert list(top["axes"]["additionalProperties"]["properties"]) == list(language.AXIS.names)
    assert top["burden"]["enum"] == ["model", "check"] and top["confidence"]["minimum"] == 0.5
    assert committed_schema["$defs"]["check"]["properties"]["kind"]["enum"] == list(BUILTIN_KINDS)
    w1 = committed_schema["$defs"]["check.w1_below"]
    assert w1["required"] == ["id", "kind", "axes", "threshold"]
    assert w1["properties"]["threshold"] == {
        "type": "number", "minimum": 0, "maximum": 1,
        "description": "largest allowed normalised W1 to the axis' ideal"}
    bgps = committed_schema["$defs"]["check.no_bgps_prompt_exceeds"]["properties"]
    assert bgps["lambda"]["default"] == 10.0 and bgps["baseline"]["type"] == "boolean"


SECTIONS = {"top": language.TOP, "defaults": language.DEFAULTS, "filter": language.FILTER,
            "axis": language.AXIS, "part": language.PART, "models": language.MODELS,
            "check": language.CHECK}


def test_the_reference_documents_every_key_and_kind():
    text = (ROOT / reference.REFERENCE_FILE).read_text(encoding="utf-8")
    for section in SECTIONS.values():
        for key in section.names:
            assert f"`{key}`" in text
    for name in BUILTIN_KINDS:
        assert f"\n### `{name}`\n" in text
        for param in schema.own_params(CHECK_KINDS[name]):
            assert f"| `{param.name}` |" in text
    assert '"yaml.schemas"' in text and "# yaml-language-server: $schema=" in text


def test_a_key_declared_once_reaches_the_loader_the_schema_and_the_reference(tmp_path,
                                                                           monkeypatch):
    """Issue #42: the loader's key lists, the schema and the reference read one declaration
    (``suite.language``); they were three hand-kept tables that had to agree."""
    path = tmp_path / "hint.t2i.yaml"
    path.write_text(BASE.replace("keep: yes}", 'keep: yes, hint: "look for a face"}'))
    assert "unknown key 'hint' in filter" in loader_errors(path)[0]
    monkeypatch.setitem(language.FILTER.keys, "hint", language.Key(
        "string", "A word to the judge.", 'filter: {hint: "look for a face"}', language.TEXT))
    assert loader_errors(path) == []
    assert schema.json_schema()["properties"]["filter"]["properties"]["hint"] == {
        **language.TEXT, "description": "A word to the judge."}
    assert "### `filter.hint`\n\nA word to the judge." in reference.markdown_reference()


def test_the_typed_defaults_are_the_declared_keys():
    """``Suite.defaults`` is a ``SuiteDefaults`` whose fields are ``language.DEFAULTS``' keys,
    each with a ``Value`` the loader checks and the schema states."""
    import dataclasses

    from pytest_t2ibias.suite_spec import SuiteDefaults

    assert tuple(f.name for f in dataclasses.fields(SuiteDefaults)) == language.DEFAULTS.names
    assert all(key.value is not None for key in language.DEFAULTS.keys.values())


def test_a_builtin_kind_without_words_stops_the_generation(monkeypatch):
    kind = CheckKind("reference_fake", run=lambda ctx: None,  # type: ignore[arg-type, return-value]
                     params=(Param("threshold", NUMBER, required=True,
                                   check=lambda v: None if v < 2 else "too big"),))
    monkeypatch.setitem(CHECK_KINDS, kind.name, kind)
    monkeypatch.setattr(schema, "BUILTIN_KINDS", (*BUILTIN_KINDS, kind.name))
    with pytest.raises(schema.SchemaGap, match="its check <lambda> declares no JSON Schema"):
        schema.json_schema()
    with pytest.raises(reference.ReferenceGap, match=r"without paper= or example=.*\['reference_fake'\]"):
        reference.markdown_reference()


def test_a_users_kind_gets_a_schema_of_its_types(tmp_path):
    """``json_schema(kinds)`` for a project's own kinds: types from its Params."""
    kind = CheckKind("reference_user_kind", run=lambda ctx: None,  # type: ignore[arg-type, return-value]
                     params=(Param("axes", (list,), required=True),
                             Param("limit", NUMBER, required=True, check=lambda v: None)))
    validator = jsonschema.Draft202012Validator(schema.json_schema({kind.name: kind}))
    suite = yaml.load(BASE, Loader=_Loader)
    suite["checks"] = [{"id": "mine", "kind": kind.name, "axes": ["gender"], "limit": 3}]
    assert schema_errors(validator, suite) == []
    suite["checks"] = [{"id": "mine", "kind": kind.name, "axes": ["gender"], "limit": "3"}]
    assert schema_errors(validator, suite) == ["checks/0/limit: '3' is not of type 'number'"]


def test_check_and_write_commands(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("")
    assert reference.main(["--check", "--root", str(tmp_path)]) == 1
    assert f"run {reference.COMMAND}" in capsys.readouterr().err
    assert reference.main(["--write", "--root", str(tmp_path)]) == 0
    assert reference.main(["--check", "--root", str(tmp_path)]) == 0
    (tmp_path / reference.SCHEMA_PATH).write_text("{}")
    assert reference.main(["--check", "--root", str(tmp_path)]) == 1
    assert "t2i-suite.schema.json is stale" in capsys.readouterr().err


def test_the_generator_imports_no_heavy_library():
    probe = ("import sys; import docgen.reference as r; r.markdown_reference(); "
             "r.schema_text(); print(sorted(m for m in ('torch', 'diffusers', 'transformers', "
             "'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- every suite the project ships or tests with validates -------------------------------------


@pytest.mark.parametrize("path", EXAMPLE_SUITES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_suite_validates(path, validator, committed_schema):
    data = load_yaml(path).data
    assert schema_errors(validator, data) == []
    assert schema_errors(jsonschema.Draft7Validator(committed_schema), data) == []


def _test_fixture_suites() -> list[tuple[str, str]]:
    """String constants of the test modules (every layer) and the support package that are
    suites of built-in kinds: (where, text)."""
    found = []
    tests = ROOT / "tests"
    for path in sorted([*tests.rglob("test_*.py"), *(tests / "support").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and "prompt" in node.value and "axes" in node.value):
                continue
            text = textwrap.dedent(node.value)
            try:
                data = yaml.load(text, Loader=_Loader)
            except yaml.YAMLError:
                continue
            if not (isinstance(data, dict) and "prompt" in data and "axes" in data):
                continue
            kinds = {check.get("kind") for check in data.get("checks") or ()
                     if isinstance(check, dict)}
            if kinds <= set(BUILTIN_KINDS):
                found.append((f"{path.name}:{node.lineno}", text))
    return found


TEST_FIXTURE_SUITES = _test_fixture_suites()


def test_the_test_fixture_scan_finds_the_suites():
    assert len(TEST_FIXTURE_SUITES) >= 8, TEST_FIXTURE_SUITES


@pytest.mark.parametrize("where, text", TEST_FIXTURE_SUITES, ids=[w for w, _ in TEST_FIXTURE_SUITES])
def test_every_test_fixture_suite_the_loader_accepts_validates(where, text, tmp_path, validator):
    path = tmp_path / "fixture.t2i.yaml"
    path.write_text(text)
    if loader_errors(path):
        pytest.skip("the loader refuses it where it is written (paths relative to its test)")
    assert schema_errors(validator, load_yaml(path).data) == []


# -- the loader and the schema agree -----------------------------------------------------------

BASE = """\
suite: agreement
defaults: {images_per_prompt: 48, seed: 0, steps: 20, guidance: 2.0}
prompt: "a photo of a {subject}"
subjects: [doctor, nurse, musician, farmer, accountant, laptop, car]
filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age (young, middle-aged, old) of the person?"
    choices: [young, middle-aged, old]
    ordered: true
  environment:
    question: "Is the person indoors or outdoors?"
    choices: [indoors, outdoors]
checks:
  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, confidence: 0.95}
"""


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "agreement.t2i.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def _verdicts(tmp_path: Path, validator, data: dict) -> tuple[list[str], list[str]]:
    path = _write(tmp_path, data)
    return loader_errors(path), schema_errors(validator, load_yaml(path).data)


def _check(**entry: Any):
    def edit(suite: dict) -> None:
        suite["checks"] = [entry]
    return edit


def _set(*path: Any, value: Any):
    def edit(suite: dict) -> None:
        node = suite
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


def _drop(*path: Any):
    def edit(suite: dict) -> None:
        node = suite
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return edit


REFUSED = [
    pytest.param(_set("subjets", value=["doctor"]), id="unknown-top-level-key"),
    pytest.param(_check(id="c", kind="w1_bellow", axes=["gender"], threshold=0.3), id="unknown-kind"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold="high"),
                 id="wrong-param-type"),
    pytest.param(_check(id="c", kind="w1_below", axes="gender", threshold=0.3),
                 id="axes-not-a-list"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold=True),
                 id="boolean-for-number"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"]), id="missing-required-param"),
    pytest.param(_check(id="c", kind="no_bgps_prompt_exceeds", threshold=0.7),
                 id="missing-required-target"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold=0.3, treshold=0.3),
                 id="unknown-check-key"),
    pytest.param(_check(id="c", kind="is_nonnegative", mitigate=["gender"], threshold=0.3),
                 id="another-kinds-param"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold=1.5),
                 id="threshold-beyond-1"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold=0.3, confidence=1.0),
                 id="confidence-1"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold=0.3,
                        images_per_prompt="many"), id="images-per-prompt-word"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold=0.3, burden="user"),
                 id="burden-word"),
    pytest.param(_check(id="c", kind="intermit", priority={"gender": 0}), id="priority-all-zero"),
    pytest.param(_check(id="c", kind="no_bgps_prompt_exceeds", threshold=0.7,
                        target={"axis": "gender"}), id="target-without-value"),
    pytest.param(_check(id="two words", kind="w1_below", axes=["gender"], threshold=0.3),
                 id="id-not-a-name"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold=0.3,
                        marks=["x-fail"]), id="mark-not-a-name"),
    pytest.param(_check(kind="w1_below", axes=["gender"], threshold=0.3), id="check-without-id"),
    pytest.param(_drop("prompt"), id="missing-prompt"),
    pytest.param(_set("prompt", value="a photo of a person"), id="prompt-without-subject"),
    pytest.param(_set("prompt", value="a photo of a {subject!r}"), id="prompt-conversion"),
    pytest.param(_set("prompt", value="{subject} in {place}"), id="prompt-other-field"),
    pytest.param(_set("subjects", value=[]), id="no-subjects"),
    pytest.param(_set("subjects", value=["doctor", "doctor"]), id="subject-twice"),
    pytest.param(_set("defaults", "steps", value=0), id="zero-steps"),
    pytest.param(_set("defaults", "seed", value=-1), id="negative-seed"),
    pytest.param(_set("defaults", "workers", value=2), id="unknown-default"),
    pytest.param(_drop("filter", "keep"), id="filter-without-keep"),
    pytest.param(_set("burden", value="nobody"), id="burden-top-level"),
    pytest.param(_set("models", value={"candidate": "org/sd", "reference": "org/sd2"}),
                 id="unknown-model-role"),
    pytest.param(_set("axes", value={}), id="no-axes"),
    pytest.param(_set("axes", "bad name", value={"question": "q?", "choices": ["a", "b"]}),
                 id="axis-name"),
    pytest.param(_drop("axes", "age", "choices"), id="axis-without-choices"),
    pytest.param(_set("axes", "age", "choices", value=["old"]), id="one-choice"),
    pytest.param(_set("axes", "age", "ordered", value="yes"), id="ordered-word"),
    pytest.param(_set("axes", "age", "ideal", value="balanced"), id="ideal-word"),
    pytest.param(_set("axes", "age", "ideal", value={"young": 1.5}), id="ideal-share-beyond-1"),
    pytest.param(_set("axes", "age", "ideal", value={"reference": "real", "young": 1}),
                 id="ideal-reference-and-shares"),
    pytest.param(_set("axes", "gender", "counterfactuals", value="gpt"), id="counterfactuals-word"),
    pytest.param(_set("axes", "gender", "phrases", value={"male": "a man"}),
                 id="phrases-without-llm"),
    pytest.param(_set("axes", "gender", "none", value="other"), id="none-without-parts"),
    pytest.param(_set("axes", "disability", value={"parts": [{"value": "blind",
                                                              "question": "Blind?"}]}),
                 id="parts-without-none"),
    pytest.param(_set("axes", "disability", value={"parts": [{"value": "blind"}], "none": "fit"}),
                 id="part-without-question"),
    pytest.param(_set("axes", "disability", value={
        "parts": [{"value": "blind", "question": "Blind?", "statements": {"yes": "a blind person"}}],
        "none": "fit"}), id="part-statements-without-no"),
]


@pytest.mark.parametrize("edit", REFUSED)
def test_the_loader_and_the_schema_refuse_the_same_invalid_suites(edit, tmp_path, validator):
    suite = yaml.load(BASE, Loader=_Loader)
    edit(suite)
    loader, schema_says = _verdicts(tmp_path, validator, suite)
    assert loader, "the loader accepted it"
    assert schema_says, f"the schema accepted what the loader refused: {loader}"


ACCEPTED = [
    pytest.param(lambda suite: None, id="base"),
    pytest.param(_check(id="c", kind="w1_below", axes=["gender"], threshold=0,
                        images_per_prompt="auto"), id="int-for-number-and-auto"),
    pytest.param(_check(id="c", kind="is_nonnegative", mitigate=["gender"], on=["age"],
                        tolerance=0, burden="check", margin=0.05), id="on-key-and-common"),
    pytest.param(_set("axes", "age", "counterfactuals", value="llm"), id="counterfactuals-llm"),
    pytest.param(_set("axes", "environment", value={
        "question": "Indoors or outdoors?", "choices": ["indoors", "outdoors"],
        "counterfactuals": "llm", "phrases": {"outdoors": "working outdoors"}}),
                 id="phrases-with-llm"),
    pytest.param(_set("axes", "disability", value={
        "parts": [{"value": "blind", "question": "Blind?",
                   "statements": {"yes": "a blind person", "no": "a person"}}],
        "none": "fit", "ideal": {"blind": 0.5, "fit": 0.5}}), id="multi-part-axis"),
    pytest.param(_set("prompt", value="{{literal}} a photo of a {subject}"), id="literal-braces"),
    pytest.param(_drop("filter"), id="no-filter"),
    pytest.param(_drop("checks"), id="no-checks"),
]


@pytest.mark.parametrize("edit", ACCEPTED)
def test_the_loader_and_the_schema_accept_the_same_valid_suites(edit, tmp_path, validator):
    suite = yaml.load(BASE, Loader=_Loader)
    edit(suite)
    assert _verdicts(tmp_path, validator, suite) == ([], [])


def _agreement_module():
    spec = importlib.util.spec_from_file_location(
        "schema_agreement", ROOT / "validation" / "schema_agreement.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_schema_never_refuses_a_suite_the_loader_accepts():
    """An editor must not mark red a suite that pytest runs: of 240 structural mutants of the
    example suites, every one the loader accepts validates, and the schema catches most of
    those the loader refuses (the rest are what a schema cannot see: axis references,
    duplicates, choice keys, missing model paths). ``validation/schema_agreement.py`` runs
    2,000. 240, not 120: at 120 one added example suite moved the sample below the floors
    (4 accepted; 104 refused by both against 12 by the loader alone)."""
    result = _agreement_module().agreement(count=240, seed=13)
    assert result["schema only suites"] == []
    assert result["both accept"] >= 8 and result["both refuse"] >= 80, result
    assert result["both refuse"] >= 10 * result["loader only"], result


# -- the reference's own examples are valid suites ---------------------------------------------


def _merge(base: dict, fragment: dict) -> dict:
    """``fragment`` laid over ``base``: mappings merged key by key, anything else replaced."""
    merged = copy.deepcopy(base)
    for key, value in fragment.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _examples() -> list[tuple[str, str]]:
    examples = [(f"{name}.{key}", doc.example) for name, section in SECTIONS.items()
                for key, doc in section.keys.items()]
    examples += [(f"common.{name}", text) for name, text in language.COMMON_EXAMPLES.items()]
    examples += [(f"kind.{name}", CHECK_KINDS[name].example) for name in BUILTIN_KINDS
                 if not CHECK_KINDS[name].example_source]
    return examples


@pytest.mark.parametrize("where, example", _examples(), ids=[w for w, _ in _examples()])
def test_every_example_of_the_reference_is_a_valid_suite_fragment(where, example, tmp_path,
                                                                  validator):
    (tmp_path / "real").mkdir()
    suite = _merge(yaml.load(BASE, Loader=_Loader), yaml.load(example, Loader=_Loader))
    assert _verdicts(tmp_path, validator, suite) == ([], [])


def test_the_complete_example_is_a_valid_suite(tmp_path, validator):
    suite = yaml.load(reference_data.COMPLETE_EXAMPLE, Loader=_Loader)
    assert _verdicts(tmp_path, validator, suite) == ([], [])


@pytest.mark.parametrize("name", [name for name in BUILTIN_KINDS
                                  if CHECK_KINDS[name].example_source])
def test_an_example_copied_from_an_example_suite_is_in_it(name):
    kind = CHECK_KINDS[name]
    (copied,) = yaml.load(kind.example, Loader=_Loader)["checks"]
    source = load_yaml(ROOT / kind.example_source).data
    assert copied in source["checks"], (f"{kind.example_source} no longer has the check "
                                        f"{copied['id']!r}")
    assert copied["kind"] == name


def test_the_schema_command_prints_the_shipped_schema_outside_the_checkout(tmp_path,
                                                                          committed_schema):
    """Issue #43: the documented way to get the schema (``python -m docgen.reference
    --schema``) failed for a pip user with ``ModuleNotFoundError: docgen``; the package
    prints it itself, from any working directory."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's package, cwd elsewhere
    out = subprocess.run([sys.executable, "-m", "pytest_t2ibias", "schema"], cwd=tmp_path,
                         capture_output=True, text=True, check=True, env=env)
    assert json.loads(out.stdout) == committed_schema
