import os

import pytest

pytest_plugins = ["pytester"]

# Tiny models on 2 shared cores: one thread each is many times faster than contending.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    import torch

    torch.set_num_threads(1)
