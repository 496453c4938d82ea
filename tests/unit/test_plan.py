"""One plan per check: every precedence rule of models and sampling, resolved in one place."""

from __future__ import annotations

import pytest
from support.specs import check, suite

from pytest_t2ibias._settings import Settings
from pytest_t2ibias.plan import DEFAULT_IMAGES_PER_PROMPT, DEFAULT_SEED, Plan, plan_for
from pytest_t2ibias.suite_spec import SuiteDefaults


def test_with_nothing_given_the_plan_is_the_defaults():
    plan = plan_for(Settings.standalone())
    assert plan == Plan(candidate=None, baseline=None, images_per_prompt=DEFAULT_IMAGES_PER_PROMPT,
                        seed=DEFAULT_SEED, steps=None, guidance=None)


def test_images_per_prompt_command_line_then_check_then_caller_then_suite():
    s = suite(defaults=SuiteDefaults(images_per_prompt=48, seed=7, steps=20, guidance=2.0))
    plain = Settings.standalone()
    assert plan_for(plain, s).images_per_prompt == 48
    assert plan_for(plain, s, n=32).images_per_prompt == 32
    assert plan_for(plain, s, check(images_per_prompt=200), n=32).images_per_prompt == 200
    assert plan_for(Settings.standalone(images_per_prompt=8), s, check(images_per_prompt=200)
                    ).images_per_prompt == 8


def test_seed_steps_guidance_command_line_then_caller_then_suite():
    s = suite(defaults=SuiteDefaults(seed=7, steps=20, guidance=2.0))
    plan = plan_for(Settings.standalone(), s)
    assert (plan.seed, plan.steps, plan.guidance) == (7, 20, 2.0)
    plan = plan_for(Settings.standalone(), s, seed=3, steps=5, guidance=9.0)
    assert (plan.seed, plan.steps, plan.guidance) == (3, 5, 9.0)
    plan = plan_for(Settings.standalone(seed=0, steps=30, guidance=0.0), s, seed=3, guidance=9.0)
    assert (plan.seed, plan.steps, plan.guidance) == (0, 30, 0.0)  # 0 and 0.0 are choices


def test_models_command_line_then_suite_then_ini():
    s = suite(models={"candidate": "/suite/cand", "baseline": "/suite/base"})
    from_ini = Settings.standalone(model="/ini/cand", baseline_model="/ini/base")
    assert plan_for(from_ini, s).model("candidate") == "/suite/cand"
    assert plan_for(from_ini, s).model("baseline") == "/suite/base"
    assert plan_for(from_ini).model("candidate") == "/ini/cand"

    from_cli = Settings.standalone(model="/cli/cand", baseline_model="/ini/base",
                                   models_from_command_line=frozenset({"model"}))
    assert plan_for(from_cli, s).model("candidate") == "/cli/cand"
    assert plan_for(from_cli, s).model("baseline") == "/suite/base"

    audit = Settings.standalone(images="/cli/images", models_from_command_line=frozenset({"images"}))
    assert plan_for(audit, s).model("candidate") == "/cli/images"


def test_an_unknown_role_is_refused():
    with pytest.raises(ValueError, match="unknown generator role 'teacher'"):
        plan_for(Settings.standalone()).model("teacher")
