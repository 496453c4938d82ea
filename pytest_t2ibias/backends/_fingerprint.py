"""What identifies a model's weights, for cache keys: content hashes locally, commits on the hub."""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._files import read_json

# Files that change what a model computes; READMEs, images and VCS metadata do not.
MODEL_FILE_SUFFIXES = frozenset({
    ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".msgpack", ".onnx", ".gguf",
    ".json", ".txt", ".model", ".jinja", ".tiktoken", ".spm", ".yaml",
})

_CHUNK = 1 << 20
# (resolved path, mtime_ns, size) -> sha256 hex: a file is hashed once per process.
_FILE_HASHES: dict[tuple[str, int, int], str] = {}


def looks_like_path(path_or_id: str | os.PathLike) -> bool:
    """True for things only a filesystem path can be (a hub id is ``name`` or ``org/name``),
    and for ``dir/name`` whose ``dir`` exists here: a mistyped local model, not a hub id."""
    text = os.fspath(path_or_id)
    if os.path.exists(text) or isinstance(path_or_id, Path):
        return True
    return (
        text.startswith((".", "/", "~", "\\"))
        or text.count("/") > 1
        or "\\" in text
        or (len(text) > 1 and text[1] == ":")
        or ("/" in text and os.path.isdir(text.split("/", 1)[0]))
    )


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes, read in chunks, cached per (path, mtime, size)."""
    resolved = os.path.realpath(path)
    stat = os.stat(resolved)
    key = (resolved, stat.st_mtime_ns, stat.st_size)
    if key not in _FILE_HASHES:
        digest = hashlib.sha256()
        with open(resolved, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        _FILE_HASHES[key] = digest.hexdigest()
    return _FILE_HASHES[key]


def files_fingerprint(root: Path, relative_paths: list[str]) -> str:
    """sha256 over (relative path, size, content hash) of the given files, in sorted order."""
    digest = hashlib.sha256()
    for relative in sorted(relative_paths):
        path = root / relative
        digest.update(f"{relative}\0{path.stat().st_size}\0{file_sha256(path)}\n".encode())
    return digest.hexdigest()


def directory_fingerprint(root: str | os.PathLike) -> str:
    """Content fingerprint of every weight, config and tokenizer file under ``root``."""
    root = Path(root).expanduser()
    relative_paths = [
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if path.is_file()
        and path.suffix.lower() in MODEL_FILE_SUFFIXES
        and not any(part.startswith(".") for part in path.relative_to(root).parts)
    ]
    return "sha256:" + files_fingerprint(root, relative_paths)


def hub_fingerprint(repo_id: str, revision: str | None = None) -> str:
    """``hub:<id>@<commit>`` from the local HF cache; ``hub:<id>@<revision>`` if not cached.

    The commit is what the revision resolved to when the files were downloaded, so it names
    the exact weights without hashing gigabytes.
    """
    from huggingface_hub import snapshot_download

    try:
        snapshot = snapshot_download(repo_id, revision=revision, local_files_only=True)
    except Exception:  # not cached (yet): fall back to the name
        return f"hub:{repo_id}@{revision or 'main'}"
    return f"hub:{repo_id}@{Path(snapshot).name}"


def model_fingerprint(path_or_id: str | os.PathLike, revision: str | None = None) -> str:
    """Deterministic id of a model's weights: changes when any weight or config byte does."""
    if looks_like_path(path_or_id) and Path(os.fspath(path_or_id)).expanduser().is_dir():
        return directory_fingerprint(path_or_id)
    return hub_fingerprint(os.fspath(path_or_id), revision)


def settings_fingerprint(settings: dict[str, Any]) -> str:
    """sha256 of a settings dict as canonical JSON (sorted keys; unknown objects via str)."""
    text = json.dumps(settings, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def config_file(model: str, name: str, *, offline: bool,
                revision: str | None = None) -> dict[str, Any]:
    """A small JSON config of a local dir or hub repo (at ``revision``: the same files the
    weights load from), read without loading any weights.
    A local one that is not a regular file of a JSON object is a ``BackendError`` naming the
    file (issue #47: a ``unet/config.json`` that is not JSON was an INTERNALERROR)."""
    local = Path(model) / name
    if local.exists():
        return _local_config(local)
    if Path(model).exists():
        return {}
    return dict(_hub_config_file(model, name, offline, revision))


def _local_config(path: Path) -> dict[str, Any]:
    """``path`` read as a JSON object through the guarded read (a FIFO or a /dev/zero link is
    refused, not read), or a ``BackendError`` naming the file."""
    from ..errors import BackendError

    try:
        config = read_json(path)
    except (OSError, ValueError) as error:  # NotARegularFile and bad JSON are ValueErrors
        raise BackendError(f"{path} is not a model config ({error}); restore the model's "
                           "file") from None
    if not isinstance(config, dict):
        raise BackendError(f"{path} holds a JSON {type(config).__name__}, not an object; "
                           "restore the model's file")
    return config


@lru_cache(maxsize=256)
def _hub_config_file(model: str, name: str, offline: bool,
                     revision: str | None = None) -> dict[str, Any]:
    """A hub repo's config, once a process: a fingerprint, the pipeline's own sampling and the
    header read the same few files, and an unreachable hub must be waited on once only."""
    try:
        from huggingface_hub import hf_hub_download

        return read_json(hf_hub_download(model, name, revision=revision,
                                         local_files_only=offline))
    except Exception:  # an unreachable hub must not fail here: loading reports it properly
        return {}
