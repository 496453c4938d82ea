import os

import pytest

# The plugin imports scipy lazily; pytester's inline runs forget modules first imported inside
# them, and numpy's C extensions cannot be imported twice in one process. Import it up front.
import scipy.stats  # noqa: F401

pytest_plugins = ["pytester"]

# Tiny models on 2 shared cores: one thread each is many times faster than contending.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    import torch

    torch.set_num_threads(1)
