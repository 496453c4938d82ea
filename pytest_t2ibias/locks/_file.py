"""What every lock file shares: where it lives beside its suite, how the LLM that wrote it is
named and fingerprinted, and how it is written (atomically, under a file lock kept out of the
suite's folder). Each lock (``counterfactual``, ``bgps``, ``openbias``) keeps its own schema,
version and reading rules on top of these.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..store.cache import locked, write_atomically

UPDATE_OPTION = "--t2i-update-locks"
"""The one option that replaces a lock file."""


def lock_path(suite_path: Path, kind: str = "") -> Path:
    """``x.t2i.yaml`` -> ``x.t2i.lock.json`` (or ``x.t2i.<kind>.lock.json``: the BGPS and
    OpenBias locks), in the suite's folder."""
    name = suite_path.name
    for suffix in (".yaml", ".yml"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return suite_path.with_name(f"{name}.{kind + '.' if kind else ''}lock.json")


def llm_weights(model: str) -> str:
    """The LLM's weights fingerprint without loading it: file hashes, or the hub commit."""
    from ..backends._fingerprint import model_fingerprint

    return model_fingerprint(model)


def shown_model(model: str, folder: Path) -> str:
    """A local LLM path relative to the lock (machine-independent); a hub id as given."""
    if os.path.isdir(model):
        return Path(os.path.relpath(Path(model).resolve(), folder.resolve())).as_posix()
    return model


def lock_key(path: Path) -> Path:
    """Where the file lock for writing ``path`` lives: the temp folder, so no ``.lock`` file is
    left beside the suite to be committed by mistake (xdist workers share the machine)."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    folder = Path(tempfile.gettempdir()) / "pytest-t2ibias-locks"
    folder.mkdir(exist_ok=True)
    return folder / digest


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Hold ``path``'s file lock: one process reads, updates and writes it at a time."""
    with locked(lock_key(path)):
        yield


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a reader sees the old file or the new)."""
    write_atomically(path, text.encode("utf-8"))
