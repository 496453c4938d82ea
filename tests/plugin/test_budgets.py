"""One set of work budgets (``budgets``), read by the options, the loader, the session plan
and the progress tally, and said at startup (issue #35): a run asking for more is refused
quickly, with a message naming the option or the totals, before it holds the work."""

from __future__ import annotations

import pytest
from support.fresh_process import traced_in_fresh_process

from pytest_t2ibias.budgets import MAX_IMAGE_SIDE, MAX_RUN_IMAGES
from pytest_t2ibias.errors import SuiteError
from pytest_t2ibias.suite import load_suite

BUDGETS_PEAK_MB = 128
"""Traced peak of refusing the huge suite: about 35 MB now (pytest collecting in a fresh
process, the plugin imported before tracing); a tuple per planned image, as the old progress tally held, is 10,000,000 of them (600+ MB)."""

pytest_plugins = "pytester"

SUBJECTS = ", ".join(f"s{i}" for i in range(100))
AXES = "\n".join(f'  a{i}: {{question: "q{i}", choices: [x, y]}}' for i in range(30))
HUGE_BUT_VALID = f"""\
prompt: "a photo of a {{subject}}"
subjects: [{SUBJECTS}]
axes:
{AXES}
checks:
  - {{id: c, kind: w1_below, axes: [{", ".join(f"a{i}" for i in range(30))}], threshold: 0.3,
     images_per_prompt: 100000}}
"""


def test_a_huge_but_valid_suite_is_refused_quickly_in_bounded_memory(pytester):
    """Was: 100 subjects at 100,000 images a prompt over 30 axes grew to 2.9 GB in 70 s,
    printing nothing (the progress tally held a tuple per image and question)."""
    pytester.makefile(".t2i.yaml", big=HUGE_BUT_VALID)
    # pytest run in a fresh process, traced there: a full run's high-water mark cannot hide a
    # regression, nor its earlier imports make this one look cheaper than it is.
    run = traced_in_fresh_process("""
        import pytest

        import pytest_t2ibias


        def operation():
            return int(pytest.main(["-p", "no:cacheprovider", "--t2i-model=m", "--collect-only"]))
        """, cwd=pytester.path)
    assert run.result == pytest.ExitCode.USAGE_ERROR
    pytest.LineMatcher(run.stderr.splitlines()).fnmatch_lines([
        f"ERROR: t2ibias: the selected checks plan 10,000,000 images, more than the "
        f"{MAX_RUN_IMAGES:,} a run may plan (t2ibias budgets; the largest check: "
        f"big.t2i.yaml::c?s0-a0? at 100,000 images a prompt); select fewer checks*"])
    assert run.peak_mb < BUDGETS_PEAK_MB, run.peak_mb


def test_the_budgets_are_said_after_collection(pytester):
    pytester.makefile(".t2i.yaml", small=HUGE_BUT_VALID.replace("100000", "10").replace(
        SUBJECTS, "s0"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=m", "--collect-only")
    result.stdout.fnmatch_lines([f"t2ibias: budgets: at most 100,000 images a prompt, "
                                 f"{MAX_IMAGE_SIDE:,} px a side, {MAX_RUN_IMAGES:,} images and "
                                 f"10,000,000 answers planned a run"])


@pytest.mark.parametrize("option, says", [
    ("--t2i-images-per-prompt=99999999999999999999",
     "--t2i-images-per-prompt must be an integer in [1, 100,000], got 99999999999999999999"),
    ("--t2i-height=40000", f"--t2i-height must be an integer in [8, {MAX_IMAGE_SIDE:,}], "
                           f"got 40000"),
    ("--t2i-width=0", f"--t2i-width must be an integer in [8, {MAX_IMAGE_SIDE:,}], got 0"),
    (f"--t2i-seed={'9' * 400}", "--t2i-seed must be an integer in [0, 9,223,372,036,854,775,807]"
                                ", got 99999999999999999999... (400 digits)"),
    (f"--t2i-guidance={'9' * 400}", "--t2i-guidance must be a finite number >= 0"),
], ids=["images-per-prompt", "height", "width", "seed", "guidance"])
def test_an_option_past_its_budget_is_a_usage_error_naming_it(pytester, option, says):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("key", ["height", "width"])
def test_a_suite_size_past_the_budget_is_a_file_line_error(tmp_path, key):
    path = tmp_path / "s.t2i.yaml"
    path.write_text(f"defaults: {{{key}: 40000}}\n" + HUGE_BUT_VALID.replace("100000", "10"))
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert info.value.line == 1
    assert f"defaults.{key} must be an integer in [8, {MAX_IMAGE_SIDE:,}] (pixels), got the " \
           f"number 40000" in str(info.value)
