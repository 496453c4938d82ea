"""What every lock file shares: where it lives beside its suite, its versioned format (read,
checked and written here: ``LockFormat``), how the LLM that wrote it is named, fingerprinted
and found stale (``llm_changed``), and how it is written (atomically, under a file lock kept
out of the suite's folder). Each lock (``counterfactual``, ``bgps``, ``openbias``) adds only
its small schema (``LockFormat`` and a shape rule) and what makes an entry stale.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._files import read_bounded
from ..errors import LockfileError
from ..store.cache import locked, write_atomically

UPDATE_OPTION = "--t2i-update-locks"
"""The one option that replaces a lock file."""
FROZEN_OPTION = "--t2i-frozen-locks"
"""Lock files are read, never written (on by itself under ``CI=true``), as syrupy's snapshots
are in CI: a lock written on a CI runner would be thrown away with it."""


def frozen_refusal(path: Path, what: str, *, at: Path | None = None, line: int = 1
                   ) -> LockfileError:
    """The error for ``what`` (a lock file, or an entry of one) missing while locks are
    frozen; ``at``/``line``: where the suite asks for it (default: the lock itself)."""
    return LockfileError(
        at or path, line,
        f"{path.name} has no {what}, and lock files are frozen here ({FROZEN_OPTION}, or "
        f"CI=true): a lock written on a CI runner is thrown away with it. Write it where it is "
        f"kept: run with --t2i-llm on your machine, review and commit {path.name}; or pass "
        f"{UPDATE_OPTION} to write it here anyway")


LOCK_ENTRIES = ("gates", "entries")
"""Where a keyed lock file (BGPS: ``gates``, OpenBias: ``entries``) keeps its entries."""

used_entries: dict[str, set[str]] = {}
"""Lock file (resolved path) -> the entries this process's checks read or wrote: what is left
over in a file a whole run read is unused (``unused_entries``)."""


def note_used(path: Path, key: str) -> None:
    used_entries.setdefault(str(Path(path).resolve()), set()).add(key)


def unused_entries(used: dict[str, set[str]]) -> dict[str, list[str]]:
    """Lock file -> its entries no check used, for the files ``used`` names (as syrupy warns
    of unused snapshots); files that cannot be read are the checks' errors, not listed."""
    unused = {}
    for path, keys in sorted(used.items()):
        try:
            record = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        entries: dict[str, Any] = next((record[name] for name in LOCK_ENTRIES
                        if isinstance(record, dict) and isinstance(record.get(name), dict)), {})
        left = sorted(key for key in entries if key not in keys)
        if left:
            unused[path] = left
    return unused


GATE = "gate"
"""The default protocol: its lock files keep the names (and contents) they had before
protocols; every other protocol's are its own files, which say which protocol wrote them."""


def lock_path(suite_path: Path, kind: str = "", protocol: str = GATE) -> Path:
    """``x.t2i.yaml`` -> ``x.t2i.lock.json`` (or ``x.t2i.<kind>.lock.json``: the BGPS and
    OpenBias locks), in the suite's folder; under ``protocol: paper`` its own file,
    ``x.t2i[.<kind>].paper.lock.json``: what an LLM proposed under one protocol's settings
    (OpenBias with no knowledge base, BGPS with App. C's instruction) is never read by the
    other, and both can be committed side by side."""
    name = suite_path.name
    for suffix in (".yaml", ".yml"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    parts = [part for part in (kind, "" if protocol == GATE else protocol) if part]
    return suite_path.with_name(f"{name}.{''.join(part + '.' for part in parts)}lock.json")


def protocol_of(record: dict[str, Any]) -> str:
    """The protocol a lock record was written under (a file without the field: ``gate``)."""
    return str(record.get("protocol", GATE))


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


MAX_LOCK_FILE_BYTES = 64 * 2**20
"""Largest lock file read: thousands of frozen phrasings take a few MB."""


@dataclass(frozen=True)
class LockFormat:
    """One lock's file format: its name in messages, the version this plugin reads and the key
    that holds it, what the file says about itself, and ``shape``: what is missing from a
    parsed record of the right version (None when nothing is)."""

    name: str
    version: int
    about: str
    shape: Callable[[dict[str, Any]], str | None]
    version_key: str = "lock_version"
    """``version`` in OpenBias' files, as 0.1.0 wrote them."""

    def new(self, protocol: str = GATE, **fields: Any) -> dict[str, Any]:
        """An empty record of this version, ``fields`` after its ``about``, version and (when
        not ``gate``) the protocol it is written under."""
        written_under = {} if protocol == GATE else {"protocol": protocol}
        return {"about": self.about, self.version_key: self.version, **written_under, **fields}

    def read(self, path: Path, protocol: str = GATE) -> dict[str, Any] | None:
        """The record at ``path``; None when there is none; ``LockfileError`` (at the line a
        JSON error is on) when it cannot be read, is not JSON, is not this format, or was
        written under another protocol than ``protocol`` (a file renamed or copied)."""
        record = self._read(path)
        if record is not None and protocol_of(record) != protocol:
            raise LockfileError(path, 1, (
                f"{path.name} holds {self.name} lock entries written under protocol: "
                f"{protocol_of(record)}, and this run's protocol is {protocol}: a lock is never "
                f"reused across protocols (each protocol's settings make its own proposals). "
                f"protocol: {protocol_of(record)}'s entries belong in "
                f"{lock_path_for(path, protocol, protocol_of(record))}; restore {path.name} "
                f"from version control, or delete it"))
        return record

    def _read(self, path: Path) -> dict[str, Any] | None:
        try:  # the guarded read: a FIFO or a link to /dev/zero (git carries links) refused
            text = read_bounded(path, MAX_LOCK_FILE_BYTES).decode("utf-8")
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # UnicodeDecodeError, NotARegularFile among them
            raise LockfileError(path, 1, f"cannot read {self.name} lock file: {exc}") from None
        advice = (f"restore it from version control, or delete it (or rerun with "
                  f"{UPDATE_OPTION}) to regenerate it")
        try:
            record: dict[str, Any] = json.loads(text)  # a dict once _problem() passes it
        except json.JSONDecodeError as exc:
            raise LockfileError(path, exc.lineno, f"{self.name} lock file is not valid JSON "
                                                  f"({exc.msg}, column {exc.colno}); {advice}") from None
        except RecursionError:
            raise LockfileError(path, 1, f"{self.name} lock file is nested too deeply to "
                                         f"parse; {advice}") from None
        problem = self._problem(record)
        if problem:
            raise LockfileError(path, 1, f"not a {self.name} lock file ({problem}); {advice}")
        return record

    def write(self, path: Path, record: dict[str, Any]) -> None:
        """``record`` as the file's whole text, in one step (hold ``writing(path)``)."""
        write_text(path, self.text(record))

    @staticmethod
    def text(record: dict[str, Any]) -> str:
        return json.dumps(record, indent=2, ensure_ascii=False) + "\n"

    def _problem(self, record: Any) -> str | None:
        if not isinstance(record, dict):
            return "expected a JSON object"
        if record.get(self.version_key) != self.version:
            return (f"{self.version_key} is {record.get(self.version_key)!r}, this plugin reads "
                    f"{self.version}")
        return self.shape(record)


def lock_path_for(path: Path, written: str, wanted: str) -> str:
    """The name ``path`` (a lock of protocol ``written``) has under protocol ``wanted``."""
    stem = path.name[: -len(".lock.json")] if path.name.endswith(".lock.json") else path.stem
    if written != GATE and stem.endswith("." + written):
        stem = stem[: -len(written) - 1]
    return f"{stem}{'' if wanted == GATE else '.' + wanted}.lock.json"


def llm_changed(llm_model: str | None, locked_weights: Any, locked_model: Any) -> str | None:
    """Why ``--t2i-llm`` is not the LLM that wrote a lock (or one of its entries), or None:
    the same weights, or no ``--t2i-llm`` (the lock stands for its LLM: CI may have none)."""
    if not llm_model:
        return None
    weights = llm_weights(llm_model)
    if weights == locked_weights:
        return None
    return (f"--t2i-llm {llm_model} (weights {short_weights(weights)}) is not the LLM that "
            f"wrote it ({locked_model}, weights {short_weights(locked_weights)})")


def short_weights(weights: Any) -> str:
    """A weights fingerprint as a message shows it: a hub commit whole, a file hash cut."""
    if not isinstance(weights, str):
        return repr(weights)
    return weights if weights.startswith("hub:") else weights[:19]
