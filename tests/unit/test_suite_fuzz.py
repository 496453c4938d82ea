"""Mutated example suites load, or fail as one ``SuiteError`` naming the file, in bounded memory.

The mutations (alias bombs, control characters, deep nesting, hostile template fields,
foreign tags, byte flips, ...) are those of ``validation/fuzz_suites.py``, which runs many
more of them out of CI, each file in a worker killed on a hang, and says how long the
slowest took; here hypothesis draws a fixed, small sample (derandomized). No assertion here
is on time (issue #47: a load once took 27.6 s of CPU time on a busy box, its first, under
tracemalloc, and failed a fresh clone's run): time is the validation script's to measure.
"""

from __future__ import annotations

import importlib.util
import random
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_t2ibias.suite import Suite, SuiteError, load_suite

ROOT = Path(__file__).resolve().parents[2]
MAX_TRACED_MB_PER_FILE = 64


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_suites", ROOT / "validation" / "fuzz_suites.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FUZZ = _fuzz_module()


@settings(max_examples=80, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=st.sampled_from(FUZZ.EXAMPLES), seed=st.integers(0, 2**32 - 1))
def test_mutated_suite_is_a_suite_or_a_suite_error_naming_the_file(tmp_path, source, seed):
    text, mutations = FUZZ.mutate(source.read_text(), random.Random(seed))
    path = tmp_path / f"mutant-{seed}.t2i.yaml"
    FUZZ.write_mutant(path, text)
    tracemalloc.start()
    try:
        loaded = load_suite(path)
    except SuiteError as error:
        assert path.name in str(error), (mutations, str(error))
        assert error.line >= 1
    else:
        assert isinstance(loaded, Suite)
    finally:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    assert peak < MAX_TRACED_MB_PER_FILE, (mutations, peak)


@pytest.mark.parametrize("mutation", FUZZ.MUTATIONS, ids=lambda m: m.__name__)
def test_each_mutation_kind_at_its_worst_is_bounded(tmp_path, mutation):
    """Every mutation kind, under several seeds, stays within the per-file memory budget."""
    source = (ROOT / "example_suites" / "toy_occupations.t2i.yaml").read_text()
    for seed in range(4):
        path = tmp_path / f"{mutation.__name__}-{seed}.t2i.yaml"
        FUZZ.write_mutant(path, mutation(source, random.Random(seed)))
        tracemalloc.start()
        try:
            load_suite(path)
        except SuiteError as error:
            assert path.name in str(error)
        finally:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        assert peak < MAX_TRACED_MB_PER_FILE, (seed, peak)
