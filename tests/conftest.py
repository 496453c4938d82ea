import os
from pathlib import Path

import pytest

# The plugin imports scipy lazily; pytester's inline runs forget modules first imported inside
# them, and numpy's C extensions cannot be imported twice in one process. Import it up front.
import scipy.stats  # noqa: F401

pytest_plugins = ["pytester", "tiny_models"]  # model_zoo: one build a session

# Subprocesses (pytester.runpytest_subprocess, multiprocessing "spawn") import this checkout,
# not whichever one the environment has installed in editable mode.
_ROOT = str(Path(__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])

# Lock files are frozen on a CI runner (CI=true: --t2i-frozen-locks); the tests that write
# locks set up their own files, and a test of the frozen rule sets CI itself.
os.environ.pop("CI", None)

# Tiny models on 2 shared cores: one thread each is many times faster than contending.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    import torch

    torch.set_num_threads(1)
