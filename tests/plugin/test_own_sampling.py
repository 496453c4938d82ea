"""The pipeline's own steps, guidance and size when nobody sets them, read without torch, and
the run header naming each value and where it came from (issue #22)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from support.tiny_models import import_every_class

import_every_class()  # before pytester's in-process runs (see there)

OWN = {  # diffusers' __call__ defaults; sizes: default sample size x the tiny VAE's scale
    "sd": ("StableDiffusionPipeline", 50, 7.5, 16),
    "sdxl": ("StableDiffusionXLPipeline", 50, 5.0, 16),
    "sd3": ("StableDiffusion3Pipeline", 28, 7.0, 16),
    "flux": ("FluxPipeline", 28, 3.5, 256),  # Flux's constant default_sample_size 128 x 2
    "pixart": ("PixArtAlphaPipeline", 20, 4.5, 256),
}


@pytest.mark.parametrize("name", list(OWN))
def test_own_sampling_is_what_the_loaded_pipeline_does(model_zoo, name):
    import inspect

    import torch
    from diffusers import DiffusionPipeline

    from pytest_t2ibias.backends.own_sampling import own_sampling_of

    own = own_sampling_of(str(model_zoo[name]))
    assert (own.pipeline, own.steps, own.guidance, own.height, own.width) == (*OWN[name][:3], OWN[name][3], OWN[name][3])
    pipe = DiffusionPipeline.from_pretrained(model_zoo[name])
    pipe.set_progress_bar_config(disable=True)
    parameters = inspect.signature(type(pipe).__call__).parameters
    assert parameters["num_inference_steps"].default == own.steps
    assert parameters["guidance_scale"].default == own.guidance
    if own.height <= 16:  # render at the pipeline's own size (the 256-px ones cost seconds)
        image = pipe(prompt="a photo", num_inference_steps=1, generator=torch.Generator().manual_seed(0)).images[0]
        assert image.size == (own.width, own.height)


def test_own_sampling_reads_no_torch(model_zoo):
    code = ("import sys; from pytest_t2ibias.backends.own_sampling import own_sampling_of; "
            f"own = own_sampling_of({str(model_zoo['flux'])!r}); "
            "print(own.steps, own.guidance, own.height, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["28", "3.5", "256", "False"]


def test_an_unknown_pipeline_class_is_unknown_not_guessed():
    from pytest_t2ibias.backends.own_sampling import own_sampling

    own = own_sampling({"_class_name": "MyHomeMadePipeline", "unet": ["x", "y"]}, lambda name: {})
    assert (own.pipeline, own.steps, own.guidance, own.height) == ("MyHomeMadePipeline", None, None, None)


def test_plan_names_where_each_value_came_from():
    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.plan import plan_for

    plan = plan_for(Settings.standalone(steps=3, guidance=0.0, height=16))
    assert (plan.steps, plan.guidance, plan.height, plan.width) == (3, 0.0, 16, None)
    assert plan.sources == {"steps": "--t2i-steps", "guidance": "--t2i-guidance", "height": "--t2i-height"}


def test_flux_with_nothing_set_samples_at_its_own_steps_and_guidance_and_says_so(
        pytester, model_zoo, tmp_path, monkeypatch):
    """No steps or guidance anywhere: FluxPipeline's own 28 and 3.5, named in the header; the
    size from the command line (Flux's own 1024 px would be 256 here, and slow)."""
    pytester.makefile(".t2i.yaml", flux=textwrap.dedent("""\
        suite: flux
        defaults: {images_per_prompt: 1}
        prompt: "a photo of a {subject}"
        subjects: [doctor]
        axes:
          gender: {question: "What is the gender?", choices: [male, female]}
        checks:
          - {id: severity, kind: entropy_below, axes: [gender], threshold: 1.0}
    """))
    pytester.makeconftest(textwrap.dedent("""\
        import json, os
        from diffusers import FluxTransformer2DModel

        CALLS = []
        original = FluxTransformer2DModel.forward

        def forward(self, *args, **kwargs):
            CALLS.append(float(kwargs["guidance"][0]))
            return original(self, *args, **kwargs)

        FluxTransformer2DModel.forward = forward

        def pytest_sessionfinish(session):
            FluxTransformer2DModel.forward = original
            with open(os.environ["CALLS_FILE"], "w") as file:
                json.dump(CALLS, file)
    """))
    calls = tmp_path / "calls.json"
    monkeypatch.setenv("CALLS_FILE", str(calls))
    result = pytester.runpytest("-p", "no:cacheprovider", f"--t2i-model={model_zoo['flux']}",
                                f"--t2i-vqa={model_zoo['clip']}", f"--t2i-cache-dir={tmp_path / 'cache'}",
                                "--t2i-device=cpu", "--t2i-bootstrap=50", "--t2i-height=16",
                                "--t2i-width=16")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        ("t2ibias: sampling steps 28 (FluxPipeline.__call__ default), guidance 3.5 "
         "(FluxPipeline.__call__ default), height 16 (--t2i-height), width 16 (--t2i-width)*"),
    ])
    assert json.loads(calls.read_text()) == [3.5] * 28  # one image, 28 steps at guidance 3.5
