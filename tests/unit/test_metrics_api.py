import ast
import inspect
from pathlib import Path

import pytest_t2ibias.metrics as metrics

PACKAGE = Path(metrics.__file__).parent
ALLOWED_IMPORTS = {"__future__", "numpy", "scipy", "pytest_t2ibias"}
STDLIB_USED = {"collections", "dataclasses", "functools", "itertools", "math", "typing",
               "warnings"}


def public_names_defined_in_submodules():
    names = set()
    for path in PACKAGE.glob("[!_]*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                names.add(node.name)
    return names


def test_all_is_complete_and_importable():
    # Helpers shared between modules (check_labels, label_shares, ...) are not the public API.
    internal = {"check_labels", "label_shares", "mean_of_shares"}
    internal |= {  # metrics.posterior's building blocks, shared with intersectional and power
        "dirichlet_draws",
        "ideal_not_rejected",
        "interval_from_counts",
        "kink_forms",
        "kink_lr_quantile",
        "null_critical_value",
        "observed_shares",
        "percentile_bounds",
        "profile_critical_value",
        "profile_range",
        "share_draws",
        "single_choice",
        "corrected_ideal_not_rejected",
        "bias_corrected_low",  # the corrected distances' low end (metrics.posterior)
        "posterior_matrix",  # metrics.intersectional's, shared with InterMit
    }
    internal |= {  # metrics.judge's building blocks, shared with posterior and intersectional
        "confusion_draws",
        "corrected_draws",
        "corrected_point",
        "posterior_mean_confusion",
        "project_to_simplex",
    }
    assert set(metrics.__all__) == public_names_defined_in_submodules() - internal
    for name in metrics.__all__:
        assert getattr(metrics, name) is not None


def test_all_is_sorted():
    assert metrics.__all__ == sorted(metrics.__all__)


def test_only_numpy_and_scipy():
    # The metrics must run where torch is not installed (report-only CI, a laptop).
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= ALLOWED_IMPORTS | STDLIB_USED, f"{path.name} imports {roots}"
            if "pytest_t2ibias" in roots and isinstance(node, ast.ImportFrom):
                assert node.module in {"pytest_t2ibias._types"} or node.module.startswith(
                    "pytest_t2ibias.metrics"
                ), f"{path.name} imports {node.module}"


def test_every_public_function_has_a_docstring():
    for name in metrics.__all__:
        assert inspect.getdoc(getattr(metrics, name)), name


def test_no_module_level_scipy():
    # The plugin loads in every pytest run: scipy is imported inside the functions using it.
    for path in PACKAGE.glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert not any(n.split(".")[0] == "scipy" for n in names), path.name
