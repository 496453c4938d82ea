"""Loading real checkpoints as people do (issue #22): ``--t2i-model-option KEY=VALUE`` into the
pipeline's ``from_pretrained`` (SD3 saved without T5 loads with ``text_encoder_3=null``), a
load that fails naming the part really missing, and steps past the scheduler's schedule an
error naming the option and the limit."""

from __future__ import annotations

import textwrap

import pytest
from support.tiny_models import import_every_class

from pytest_t2ibias._settings import Settings, parse_model_options
from pytest_t2ibias.errors import BackendError

import_every_class()  # before pytester's in-process runs (see there)

WITHOUT_T5 = {"text_encoder_3": None, "tokenizer_3": None}


def test_options_parse_to_from_pretrained_keywords():
    assert parse_model_options(["text_encoder_3=null", "tokenizer_3=None", "variant=fp16",
                                "torch_dtype=bf16", "enable_model_cpu_offload=true"]) == {
        "text_encoder_3": None, "tokenizer_3": None, "variant": "fp16", "dtype": "bf16",
        "enable_model_cpu_offload": True}
    with pytest.raises(ValueError, match="expects KEY=VALUE .* got 'variant'"):
        parse_model_options(["variant"])
    with pytest.raises(ValueError, match="dtype=fp8: expected one of float32"):
        parse_model_options(["dtype=fp8"])
    with pytest.raises(ValueError, match="enable_model_cpu_offload=yes please: expected true or false"):
        parse_model_options(["enable_model_cpu_offload=yes please"])


def test_sd3_saved_without_t5_names_the_missing_parts_then_loads_with_the_overrides(model_zoo):
    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends.generator import DiffusersGenerator

    path = model_zoo["sd3-no-t5"]
    with pytest.raises(BackendError) as refused:
        DiffusersGenerator.from_pretrained(path, device="cpu")
    message = str(refused.value)
    assert "Hint: the folder is a saved StableDiffusion3Pipeline, but parts its class needs are " \
           "not in it: text_encoder_3 (listed as absent in model_index.json); tokenizer_3" in message
    assert "--t2i-model-option text_encoder_3=null --t2i-model-option tokenizer_3=null" in message
    assert "safetensors" not in message.split("Hint:")[1] and "\n" not in message

    generator = DiffusersGenerator.from_pretrained(path, device="cpu", model_options=WITHOUT_T5,
                                                   steps=2, height=16, width=16)
    assert generator.pipeline.text_encoder_3 is None
    [image] = generator.generate([ImageRequest("a photo of a doctor", 0, 0)])
    assert image.size == (16, 16)


def test_a_component_folder_deleted_is_named_with_its_class(model_zoo, tmp_path):
    import shutil

    from pytest_t2ibias.backends.generator import DiffusersGenerator

    copy = shutil.copytree(model_zoo["sd"], tmp_path / "sd")
    shutil.rmtree(copy / "text_encoder")
    with pytest.raises(BackendError, match=r"text_encoder \(CLIPTextModel, whose folder text_encoder/ "
                                           r"is missing or empty\)"):
        DiffusersGenerator.from_pretrained(copy, device="cpu")


def test_cpu_offload_is_refused_on_a_cpu_run_before_loading(model_zoo):
    from pytest_t2ibias.backends.generator import DiffusersGenerator

    with pytest.raises(BackendError, match=r"enable_model_cpu_offload=true: .* this run's device "
                                           r"is cpu \(--t2i-device\)"):
        DiffusersGenerator.from_pretrained(model_zoo["sd"], device="cpu",
                                           model_options={"enable_model_cpu_offload": True})


def test_options_enter_the_cache_key_only_when_set(model_zoo, monkeypatch):
    from pytest_t2ibias.backends import _lazy

    keys = []
    original = _lazy.settings_fingerprint
    monkeypatch.setattr(_lazy, "settings_fingerprint", lambda d: keys.append(d) or original(d))
    model = str(model_zoo["sd3-no-t5"])
    settings = Settings.standalone(device="cpu")
    plain = _lazy.lazy_generator(model, settings, origin="--t2i-model")
    overridden = _lazy.lazy_generator(model, settings, origin="--t2i-model", options=WITHOUT_T5)
    half = _lazy.lazy_generator(model, settings, origin="--t2i-model", options={"dtype": "fp16"})
    assert "options" not in keys[0] and keys[1]["options"] == WITHOUT_T5
    assert "options" not in keys[2] and keys[2]["dtype"] == "torch.float16"
    assert len({plain.fingerprint, overridden.fingerprint, half.fingerprint}) == 3


def _suite(models: dict, tmp_path):
    from pytest_t2ibias.suite_spec import Suite

    return Suite(name="s", path=tmp_path / "s.t2i.yaml", prompt="a {subject}", subjects=("x",),
                 axes={}, checks=(), models={role: m["model"] for role, m in models.items()},
                 model_options={role: m["options"] for role, m in models.items() if "options" in m})


def test_each_role_loads_with_its_own_options_and_the_command_line_wins_key_by_key(tmp_path):
    from pytest_t2ibias.plan import plan_for

    suite = _suite({"candidate": {"model": "org/sd3", "options": {"variant": "fp16", "dtype": "bf16"}},
                    "baseline": {"model": "org/base", "options": WITHOUT_T5}}, tmp_path)
    plan = plan_for(Settings.standalone(), suite)
    assert plan.options("candidate") == {"variant": "fp16", "dtype": "bf16"}
    assert plan.options("baseline") == WITHOUT_T5

    given = Settings.standalone(model_options={"dtype": "fp16"},
                                baseline_model_options={"variant": "fp16"})
    plan = plan_for(given, suite)
    assert plan.options("candidate") == {"variant": "fp16", "dtype": "fp16"}
    assert plan.options("baseline") == {**WITHOUT_T5, "variant": "fp16"}

    # the suite's options belong to the suite's model: a model from the command line loads
    # with the command line's options only
    other = Settings.standalone(model="org/other", models_from_command_line=frozenset({"model"}))
    plan = plan_for(other, suite)
    assert plan.candidate == "org/other" and plan.options("candidate") == {}
    assert plan.options("baseline") == WITHOUT_T5
    assert plan_for(Settings.standalone(), None).loading == {}


def test_models_loaded_under_other_options_are_other_generators():
    from pytest_t2ibias.instrument import Models

    made = []

    class Made:
        fingerprint = "made"

        def generate(self, requests):
            return []

    class Provider:
        def generator(self, model, role, options=None):
            made.append((model, role, options))
            return Made()

    models = Models(Settings.standalone(), Provider())
    models.generator("baseline", "m", WITHOUT_T5)
    models.generator("baseline", "m", dict(reversed(list(WITHOUT_T5.items()))))
    models.generator("baseline", "m")
    assert made == [("m", "baseline", WITHOUT_T5), ("m", "baseline", None)]


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


def test_the_option_on_the_command_line_loads_sd3_without_t5(project, model_zoo):
    model = f"--t2i-model={model_zoo['sd3-no-t5']}"
    refused = project.runpytest("-p", "no:cacheprovider", model)
    refused.assert_outcomes(errors=1)
    refused.stdout.fnmatch_lines([("*--t2i-model-option text_encoder_3=null --t2i-model-option "
                                   "tokenizer_3=null*")])
    loaded = project.runpytest("-p", "no:cacheprovider", model, "--t2i-model-option=text_encoder_3=null",
                               "--t2i-model-option", "tokenizer_3=null")
    loaded.assert_outcomes(passed=1)
    bad = project.runpytest("-p", "no:cacheprovider", model, "--t2i-model-option=text_encoder_3")
    bad.stderr.fnmatch_lines(["*--t2i-model-option expects KEY=VALUE*got 'text_encoder_3'*"])


def test_steps_past_the_schedule_are_an_error_naming_the_option_and_the_limit(project, model_zoo):
    result = project.runpytest("-p", "no:cacheprovider", f"--t2i-model={model_zoo['sd']}",
                               "--t2i-steps=2000")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([("*could not run: BackendError: --t2i-steps=2000 (or the suite's "
                                  "steps) is more denoising steps than the 1000 timesteps "
                                  "DDIMScheduler of * was trained on (num_train_timesteps)*"
                                  "Use --t2i-steps=1000 or fewer.*")])
    result.stdout.no_fnmatch_line("*Traceback*")


# A whole literal, not derived from SUITE: tests/plugin/test_reference.py validates every suite
# literal of the tests against the JSON schema, this one's {model, options} form included.
SUITE_WITH_OPTIONS = """\
suite: tiny
defaults: {images_per_prompt: 2, seed: 0, steps: 2}
prompt: "a photo of a {subject}"
subjects: [doctor]
models:
  candidate:
    model: MODEL
    options: {text_encoder_3: null, tokenizer_3: null}
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
checks:
  - {id: balance, kind: entropy_below, axes: [gender], threshold: 1.0}
"""


def test_a_suites_models_entry_carries_its_loading_options(project, model_zoo):
    project.makefile(".t2i.yaml", tiny=SUITE_WITH_OPTIONS.replace("MODEL", str(model_zoo["sd3-no-t5"])))
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    # the header is written before any suite is read: the suite's own models and defaults
    # are named after collection, each value with where it came from
    result.stdout.fnmatch_lines([
        "collected 1 item",
        ("t2ibias: suite tiny (tiny.t2i.yaml): candidate *sd3-no-t5 (loaded with "
         "text_encoder_3=None, tokenizer_3=None); sampling steps 2 (suite defaults), guidance 7.0 "
         "(StableDiffusion3Pipeline.__call__ default), height 16 (--t2i-height), width 16 "
         "(--t2i-width)")])


@pytest.mark.parametrize(("entry", "message"), [
    ("{model: m, options: {dtype: fp8}}", "6: models.candidate.options dtype=fp8: expected one of"),
    ("{model: m, options: [variant]}", "6: models.candidate.options must be a mapping, got a list"),
    ("{model: m, options: {variant: [a]}}", "6: models.candidate.options.variant must be a single value"),
    ("{model: m, variant: fp16}", "6: unknown key 'variant' in models.candidate"),
    ("{options: {variant: fp16}}", "6: missing required key 'model' in models.candidate"),
])
def test_a_bad_models_entry_is_named_with_its_line(tmp_path, entry, message):
    from pytest_t2ibias.errors import SuiteError
    from pytest_t2ibias.suite import load_suite

    text = SUITE.replace("subjects: [doctor]\n", f"subjects: [doctor]\nmodels:\n  candidate: {entry}\n")
    path = tmp_path / "bad.t2i.yaml"
    path.write_text(text)
    with pytest.raises(SuiteError) as refused:
        load_suite(path)
    assert f"bad.t2i.yaml:{message}" in str(refused.value)


def test_offload_hands_the_pipeline_to_diffusers_instead_of_moving_it(model_zoo, monkeypatch):
    """What can be checked without a GPU: with offload the pipeline is not moved to the
    device (diffusers moves each part for its forward pass), offload is enabled once, with
    this run's device, and the fingerprint says it."""
    from diffusers import DiffusionPipeline

    from pytest_t2ibias.backends.generator import DiffusersGenerator

    pipeline = DiffusionPipeline.from_pretrained(model_zoo["sd"])
    calls = []
    monkeypatch.setattr(pipeline, "enable_model_cpu_offload",
                        lambda device=None: calls.append(str(device)), raising=False)
    monkeypatch.setattr(pipeline, "to", lambda *a, **k: pytest.fail("an offloaded pipeline was moved"))
    offloaded = DiffusersGenerator(pipeline, model_fingerprint="m", device="cpu", offload=True,
                                   options={"enable_model_cpu_offload": True})
    assert calls == ["cpu"] and offloaded.pipeline is pipeline
    monkeypatch.undo()
    plain = DiffusersGenerator(pipeline, model_fingerprint="m", device="cpu")
    assert plain.fingerprint != offloaded.fingerprint
