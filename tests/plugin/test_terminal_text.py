"""User text reaches the terminal shown, never obeyed: no ESC, CR or bidirectional override
from a suite, an LLM's words or a helper's label gets through (issue #23)."""

from __future__ import annotations

import textwrap

import pytest

from pytest_t2ibias._text import shown
from pytest_t2ibias.errors import SuiteError
from pytest_t2ibias.suite.load import load_suite

HOSTILE = {
    "screen clear": "\x1b[2J",
    "OSC-8 link": "\x1b]8;;javascript:alert(1)\x1b\\click\x1b]8;;\x1b\\",
    "carriage return": "nurse\rdoctor",
    "bidi override": "nurse\u202eesrun",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_one_rule_shows_every_control_character(text):
    out = shown(text)
    assert out.isprintable() and "\u202e" not in out
    assert shown("two\nlines", keep_newlines=True) == "two\nlines"
    assert shown("two\nlines") == "two\\nlines"


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_suite_with_a_control_character_is_refused_at_its_line(tmp_path, text):
    path = tmp_path / "s.t2i.yaml"
    escaped = text.encode("unicode_escape").decode().replace('"', '\\"')
    path.write_text(textwrap.dedent(f"""\
        prompt: "a photo of a {{subject}}"
        subjects: [doctor, "{escaped}"]
        axes:
          gender: {{question: "gender?", choices: [male, female]}}
        checks:
          - {{id: c, kind: w1_below, axes: [gender], threshold: 0.5}}
        """))
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert info.value.line == 2
    assert "holds the control character" in str(info.value) and "write text only" in str(info.value)
    assert "\x1b" not in str(info.value) and "\r" not in str(info.value)


def test_no_escape_byte_reaches_the_terminal_from_a_verdict_or_a_label(pytester):
    """An LLM's words in a kind's verdict and a Python helper's label both carry an OSC-8
    link and a screen clear; the run's output holds none of their bytes."""
    pytester.makeconftest(textwrap.dedent('''
        import dataclasses
        from pytest_t2ibias import Estimate, Verdict
        from pytest_t2ibias.kinds import CHECK_KINDS

        LLM_SAID = "\\x1b]8;;javascript:alert(1)\\x1b\\\\found\\x1b]8;;\\x1b\\\\ \\x1b[2J"
        SAVED = dict(CHECK_KINDS)

        def run(ctx):
            return Verdict(outcome="fail", check="w1_below", value=Estimate(0.9, 0.8, 1.0, 10),
                           threshold=0.5, message=f"the LLM proposed {LLM_SAID}")

        def pytest_configure(config):
            CHECK_KINDS["w1_below"] = dataclasses.replace(SAVED["w1_below"], run=run,
                                                          work=None)

        def pytest_unconfigure(config):
            CHECK_KINDS.update(SAVED)
    '''))
    pytester.makefile(".t2i.yaml", s=textwrap.dedent("""\
        prompt: "a photo of a {subject}"
        subjects: [doctor]
        axes:
          gender: {question: "gender?", choices: [male, female]}
        checks:
          - {id: c, kind: w1_below, axes: [gender], threshold: 0.5}
        """))
    pytester.makepyfile(test_label=textwrap.dedent('''
        from pytest_t2ibias import assert_w1_below

        def test_label():
            assert_w1_below({"male": 9, "female": 1}, 0.1, label="\\x1b[2J\\rdoctor")
    '''))
    pytester.mkdir("m")  # a model folder (a missing one is refused at startup); never loaded
    result = pytester.runpytest("-p", "no:cacheprovider", "--color=no", "--t2i-model=m",
                                "--t2i-offline")
    result.assert_outcomes(failed=2)
    output = "\n".join(result.outlines + result.errlines)
    assert "\x1b" not in output and "\r" not in output
    assert "\\x1b]8;;javascript:alert(1)" in output  # shown, as characters
