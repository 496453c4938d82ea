import os
from pathlib import Path

import pytest

# The plugin imports scipy lazily; pytester's inline runs forget modules first imported inside
# them, and numpy's C extensions cannot be imported twice in one process. Import it up front.
import scipy.stats  # noqa: F401

# The layers (unit/, plugin/, slow/) are plain directories, not packages: pytest's default
# import mode imports each test module by its basename (unique across layers,
# tests/unit/test_test_layout.py) and puts this directory on sys.path for this conftest, so
# the shared fakes import as `support.*` whether one file, one layer or all run.
pytest_plugins = ["pytester", "support.tiny_models"]  # model_zoo: one build a session

# Subprocesses (pytester.runpytest_subprocess, multiprocessing "spawn") import this checkout,
# not whichever one the environment has installed in editable mode.
_ROOT = str(Path(__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])

# Hermetic to the environment a developer or a CI runner brings (issue #47): the offline
# switches (HF_HUB_OFFLINE refused hook-served names at startup), pytest's CI detection (it
# stops cutting summary lines) and the thread variables (the header names them) are reset
# for this process and every subprocess a test starts; a test that needs one sets it.
for _variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "CI",
                  "BUILD_NUMBER", "MKL_NUM_THREADS", "PYTEST_ADDOPTS"):
    os.environ.pop(_variable, None)
# Tiny models on 2 shared cores: one thread each is many times faster than contending.
os.environ["OMP_NUM_THREADS"] = "1"


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    import torch

    torch.set_num_threads(1)
