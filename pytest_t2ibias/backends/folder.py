"""Already-generated images from a folder, for ``--t2i-images=DIR`` (audit without a model).

Two layouts; ``index.jsonl`` wins when present:

1. ``DIR/<prompt slug>/<index>.png`` (also ``.jpg``, ``.jpeg``, ``.webp``). The slug is the
   prompt lower-cased with every character other than ``a-z0-9`` replaced by ``_``
   (``"A photo of a doctor, smiling"`` -> ``a_photo_of_a_doctor__smiling``); slugs longer than 120 characters
   are cut to 120 and end in ``-`` plus 8 hex digits of the prompt's sha256, so long prompts
   that share a beginning stay apart. See :func:`prompt_slug`.
2. ``DIR/index.jsonl``: one JSON object a line,
   ``{"prompt": "A photo of a doctor", "index": 0, "file": "doctor/000.png"}``, with
   ``file`` relative to ``DIR``.

Image ``index`` of a prompt answers request ``(prompt, index)`` whatever the suite seed: a
folder holds one fixed sample. Its fingerprint hashes the listed files' bytes, so replacing
an image invalidates cached answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from PIL import Image

from .._types import ImageRequest
from ..errors import BackendError, MissingImages
from ._fingerprint import files_fingerprint

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
INDEX_FILE = "index.jsonl"
MAX_SLUG_LENGTH = 120


def prompt_slug(prompt: str) -> str:
    """The directory name of a prompt's images (see the module docstring)."""
    slug = re.sub(r"[^a-z0-9]", "_", prompt.lower())
    if len(slug) <= MAX_SLUG_LENGTH:
        return slug
    return slug[:MAX_SLUG_LENGTH] + "-" + hashlib.sha256(prompt.encode()).hexdigest()[:8]


def _inside(relative: str) -> bool:
    """Whether an ``index.jsonl`` path stays in the folder (no absolute path, no ``..``)."""
    if not relative or os.path.isabs(relative) or relative.startswith(("/", "\\")):
        return False
    normal = os.path.normpath(relative.replace("\\", "/"))
    return normal != ".." and not normal.startswith("../") and normal != "."


class FolderImages:
    """A ``Generator`` that reads images instead of making them."""

    def __init__(self, root: str | os.PathLike[str], *, origin: str = "--t2i-images") -> None:
        self.root = Path(root).expanduser()
        self.origin = origin
        if not self.root.is_dir():
            raise BackendError(f"{origin}={root}: no such directory of images")
        self._index = self._read_index() if (self.root / INDEX_FILE).is_file() else None
        self._fingerprint: str | None = None

    def _read_index(self) -> dict[tuple[str, int], str]:
        index: dict[tuple[str, int], str] = {}
        path = self.root / INDEX_FILE
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    key = (str(entry["prompt"]), int(entry["index"]))
                    index[key] = str(entry["file"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise BackendError(
                        f"{path}:{number}: expected {{\"prompt\": ..., \"index\": ..., \"file\": ...}} "
                        f"({type(exc).__name__}: {exc})"
                    ) from None
                if not _inside(index[key]):
                    raise BackendError(
                        f"{path}:{number}: file {index[key]!r} is outside {self.root}; index "
                        f"entries name files relative to the folder, without '..' or a leading '/'"
                    )
        return index

    def _listed_files(self) -> list[str]:
        """Every image this folder offers, relative to the root."""
        if self._index is not None:
            return sorted(set(self._index.values()))
        return sorted(
            path.relative_to(self.root).as_posix()
            for path in self.root.glob("*/*")
            if path.suffix.lower() in IMAGE_SUFFIXES and path.stem.isdigit()
        )

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = "folder:" + files_fingerprint(self.root, self._listed_files())
        return self._fingerprint

    def path_for(self, prompt: str, index: int) -> Path:
        """Where image ``index`` of ``prompt`` is (or would be, for the error message)."""
        if self._index is not None:
            relative = self._index.get((prompt, index))
            return self.root / relative if relative is not None else self.root / INDEX_FILE
        directory = self.root / prompt_slug(prompt)
        for suffix in IMAGE_SUFFIXES:
            for name in (f"{index}{suffix}", f"{index:03d}{suffix}"):
                if (directory / name).is_file():
                    return directory / name
        return directory / f"{index}.png"

    def holds(self, prompt: str) -> int:
        """How many images of ``prompt`` the folder holds from index 0 on, without a gap
        (what a request for its first n can be answered from)."""
        count = 0
        while True:
            path = self.path_for(prompt, count)
            if not path.is_file() or path.name == INDEX_FILE:
                return count
            count += 1

    def _missing(self, prompt: str, index: int, expected: Path) -> MissingImages:
        if self._index is not None:
            have = sorted(i for (p, i) in self._index if p == prompt)
            where = f"no line with prompt {prompt!r} and index {index} in {self.root / INDEX_FILE}"
            if (prompt, index) in self._index:
                where = f"{self.root / INDEX_FILE} lists {expected}, which does not exist"
        else:
            directory = self.root / prompt_slug(prompt)
            have = sorted(
                int(p.stem) for p in directory.glob("*")
                if p.suffix.lower() in IMAGE_SUFFIXES and p.stem.isdigit()
            ) if directory.is_dir() else []
            where = f"expected {expected}"
        span = f" (indices {have[0]}..{have[-1]})" if have else ""
        return MissingImages(
            f"{self.origin}={self.root}: no image {index} for prompt {prompt!r}: {where}. "
            f"{len(have)} image(s) exist for this prompt{span}; add the missing images or "
            f"lower --t2i-images-per-prompt."
        )

    def generate(self, requests: list[ImageRequest]) -> list[Image.Image]:
        images = []
        for request in requests:
            path = self.path_for(request.prompt, request.index)
            if not path.is_file() or path.name == INDEX_FILE:
                raise self._missing(request.prompt, request.index, path)
            try:
                with Image.open(path) as image:
                    images.append(image.convert("RGB"))
            except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
                raise BackendError(
                    f"{self.origin}={self.root}: cannot read {path} (image {request.index} of "
                    f"prompt {request.prompt!r}): {exc}; replace the file with a valid image "
                    f"or remove it", original=exc,
                ) from None
        return images

    def __repr__(self) -> str:
        layout = INDEX_FILE if self._index is not None else "<prompt slug>/<index>.png"
        return f"{type(self).__name__}({str(self.root)!r}, layout={layout!r})"
