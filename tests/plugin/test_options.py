"""The options as users meet them: --help with types and defaults, bad ini values named."""

from __future__ import annotations

import pytest

pytest_plugins = "pytester"


def test_help_shows_types_and_defaults(pytester: pytest.Pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "*--t2i-model=PATH*",
        "*--t2i-batch-size=BATCH_SIZE*",
        "*--t2i-confidence=X*(default: 0.95)*",
    ])
    for typed in ("*t2i_bootstrap (int):*", "*t2i_confidence (float):*", "*t2i_offline (bool):*",
                  "*t2i_classifier (linelist):*"):
        result.stdout.fnmatch_lines([typed])


@pytest.mark.parametrize("key, value, expected", [
    ("t2i_bootstrap", "many", "*ini key t2i_bootstrap in *tox.ini*: invalid literal for int()*"),
    ("t2i_offline", "perhaps", "*ini key t2i_offline in *tox.ini*perhaps*"),
])
def test_a_bad_ini_value_is_a_usage_error_naming_the_key(pytester: pytest.Pytester, key,
                                                          value, expected):
    pytester.makeini(f"[pytest]\n{key} = {value}\n")
    pytester.makefile(".t2i.yaml", suite="suite: s\nsubjects: [doctor]\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-plan")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_typed_ini_values_are_read(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\nt2i_bootstrap = 321\nt2i_offline = true\nt2i_confidence = 0.9\n")
    pytester.makeconftest("""
        from pytest_t2ibias._pytest_options import read_settings

        def pytest_configure(config):
            s = read_settings(config)
            print("SETTINGS", s.bootstrap, s.offline, s.confidence)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-s", "--co")
    result.stdout.fnmatch_lines(["SETTINGS 321 True 0.9"])
