"""What a tokenizer makes of a text, remembered by (tokenizer fingerprint, text) (issue #36).

Whether a prompt has words its generator cannot read, or two statements a judge cannot tell
apart, needs the tokenizer; loading one imports transformers, and with it torch: a warm run,
which loads no model, paid two seconds and 200 MiB for that. The answer depends only on the
tokenizer's files and the text, so it is kept beside the cache
(``<cache>/tokens/<fingerprint>.json``) and a warm run, or a second ``--t2i-plan``, reads it
from there without loading the tokenizer.

The memo decides whether a prompt is read (a reading with no unknown words lets a check
pass), so it is trusted as the cache's entries are (issue #47): each reading is sealed with a
hash of the tokenizer's fingerprint, the text and every field, and one that does not match
(an ``"unknown": []`` typed in) or is not well-typed is read again with the tokenizer. The
file is read through the one guarded path (``_files.read_json``: a regular file, no link,
bounded): a FIFO or a link to ``/dev/zero`` there is ignored, never waited on or read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._files import SMALL_JSON_BYTES, read_bounded, read_json

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json", "vocab.json", "merges.txt", "vocab.txt",
                   "spiece.model", "tokenizer.model", "sentencepiece.bpe.model")
"""The files a tokenizer is made of (transformers' names); a model's weights are not."""
MEMO_VERSION = 2
"""2: each reading sealed (``reading_seal``); a version-1 memo is read again."""
MAX_MEMO_BYTES = SMALL_JSON_BYTES
MAX_TOKENIZER_FILE_BYTES = 512 * 2**20
"""Largest tokenizer file hashed: the largest hub tokenizer.json files are tens of MB."""


@dataclass(frozen=True)
class Reading:
    """One text as a tokenizer reads it."""

    unknown: tuple[str, ...]
    """Words mapped (wholly or partly) to the unknown token."""
    cut: tuple[str, ...]
    """Words past the encoder's length, never read."""
    ids: tuple[int, ...]
    """The token ids the model receives (truncated at its length, no special tokens)."""
    shown: str
    """Those ids decoded, unknown tokens included: what the model 'reads'."""
    unk_token: str | None = None
    limit: int | None = None

    def problem(self, name: str) -> str | None:
        """Why the text is not read whole by tokenizer ``name``, in words; None when it is."""
        said = []
        if self.unknown:
            said.append(f"{', '.join(self.unknown)} unknown to {name} (read as "
                        f"{self.unk_token or 'the unknown token'})")
        if self.cut:
            lost = " ".join(self.cut[:6]) + (" …" if len(self.cut) > 6 else "")
            said.append(f"cut at {self.limit} tokens by {name}: {len(self.cut)} words never "
                        f"read ('{lost}')")
        return "; ".join(said) or None


def read_text(tokenizer: Any, text: str) -> Reading:
    """``text`` through a loaded tokenizer."""
    from .vocabulary import cut_words, max_length, unread_words

    limit = max_length(tokenizer)
    encoded = tokenizer(text, add_special_tokens=False, truncation=limit is not None,
                        max_length=limit, verbose=False)["input_ids"]
    return Reading(unknown=tuple(unread_words(tokenizer, text)),
                   cut=tuple(cut_words(tokenizer, text)), ids=tuple(encoded),
                   shown=tokenizer.decode(encoded, skip_special_tokens=False).strip(),
                   unk_token=getattr(tokenizer, "unk_token", None), limit=limit)


def tokenizer_fingerprint(folder: Path) -> str | None:
    """A hash of the tokenizer files in ``folder``; None when it has none."""
    digest = hashlib.sha256()
    found = False
    for name in TOKENIZER_FILES:
        try:  # the guarded read: a FIFO or /dev/zero in a model folder is skipped, not read
            data = read_bounded(folder / name, MAX_TOKENIZER_FILE_BYTES)
        except (OSError, ValueError):
            continue
        found = True
        digest.update(name.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:32] if found else None


class TokenizerReader:
    """Reads texts with one tokenizer, loaded only for a text its memo has not seen.

    ``folder``: the tokenizer's files (loaded with ``AutoTokenizer``, local files only);
    or ``tokenizer``: one already loaded (a loaded pipeline's). ``memo``: the folder the
    readings are kept in (None: this process only)."""

    def __init__(self, name: str, *, folder: Path | None = None, tokenizer: Any = None,
                 memo: Path | None = None) -> None:
        self.name = name
        self.folder = folder
        self._tokenizer = tokenizer
        self.fingerprint = tokenizer_fingerprint(folder) if folder is not None else None
        self._memo_path = (memo / f"{self.fingerprint}.json"
                           if memo is not None and self.fingerprint else None)
        self._known: dict[str, Reading] | None = None
        self._records: dict[str, dict[str, Any]] = {}
        """The memo file's sealed records as this reader last read or wrote them."""
        self._stamp: tuple[int, int] | None = None
        """The memo file's (inode, mtime) then: unchanged, nobody else has written since."""

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(str(self.folder),
                                                            local_files_only=True)
        return self._tokenizer

    def readings(self, texts: Iterable[str]) -> dict[str, Reading]:
        """Each text's ``Reading``; the tokenizer loads only for texts never read before."""
        known = self._memo()
        texts = list(dict.fromkeys(texts))
        new = {text: read_text(self.tokenizer, text) for text in texts if text not in known}
        if new:
            known.update(new)
            self._save(new)
        return {text: known[text] for text in texts}

    def _memo(self) -> dict[str, Reading]:
        if self._known is None:
            self._known = {}
            if self._memo_path:
                self._reread(self._memo_path)
        return self._known

    def _reread(self, path: Path) -> None:
        """The memo file's sealed readings into this reader (each checked once, as read)."""
        checked = _read_memo_records(path, self.fingerprint)
        self._records = {text: record for text, (_, record) in checked.items()}
        self._known = {**(self._known or {}),
                       **{text: reading for text, (reading, _) in checked.items()}}
        self._stamp = _stamp(path)

    def _save(self, new: dict[str, Reading]) -> None:
        """Adds ``new`` to the memo file (what other processes wrote meanwhile kept); a memo
        that cannot be written is no error: the next run reads the tokenizer again. Only a
        file another process has rewritten is read back: InterMit adds thousands of prompts
        in hundreds of calls, and re-reading and re-sealing the whole memo each time made
        a run quadratic in its prompts."""
        if self._memo_path is None:
            return
        if _stamp(self._memo_path) != self._stamp:
            self._reread(self._memo_path)
        self._records.update({text: {**asdict(reading),
                                     "seal": reading_seal(self.fingerprint, text, reading)}
                              for text, reading in new.items()})
        payload = {"version": MEMO_VERSION, "tokenizer": str(self.folder),
                   "readings": self._records}
        try:
            self._memo_path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self._memo_path.parent, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(payload, out)
            os.replace(temporary, self._memo_path)
        except OSError:
            return
        self._stamp = _stamp(self._memo_path)

    def __repr__(self) -> str:
        return f"TokenizerReader({self.name!r}, {self.folder})"


def reading_seal(fingerprint: str | None, text: str, reading: Reading) -> str:
    """The hash a memo's reading is kept with: of the tokenizer, the text and every field."""
    canonical = json.dumps(["reading", MEMO_VERSION, fingerprint, text, asdict(reading)],
                           sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _stamp(path: Path) -> tuple[int, int] | None:
    """The file's (inode, mtime): a rewrite (``os.replace``) changes both."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns


def _read_memo_records(path: Path, fingerprint: str | None
                       ) -> dict[str, tuple[Reading, dict[str, Any]]]:
    """The memo's sealed, well-typed readings with their records; any other is left out
    (read again)."""
    try:
        payload = read_json(path, MAX_MEMO_BYTES, follow_links=False)
    except (OSError, ValueError):
        return {}  # absent, damaged, or no regular file: read again, and rewritten
    if not isinstance(payload, dict) or payload.get("version") != MEMO_VERSION:
        return {}
    readings = payload.get("readings")
    known = {}
    for text, record in readings.items() if isinstance(readings, dict) else ():
        reading = _reading_of(record)
        if reading is not None and record.get("seal") == reading_seal(fingerprint, text, reading):
            known[text] = (reading, record)
    return known


def _reading_of(record: Any) -> Reading | None:
    """A ``Reading`` from a memo record whose fields have their types; else None."""
    def strings(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    def optional(value: Any, kind: type) -> bool:
        return value is None or (isinstance(value, kind) and not isinstance(value, bool))

    if not (isinstance(record, dict) and strings(record.get("unknown"))
            and strings(record.get("cut")) and isinstance(record.get("shown"), str)
            and isinstance(record.get("ids"), list)
            and all(isinstance(i, int) and not isinstance(i, bool) for i in record["ids"])
            and optional(record.get("unk_token"), str) and optional(record.get("limit"), int)):
        return None
    return Reading(unknown=tuple(record["unknown"]), cut=tuple(record["cut"]),
                   ids=tuple(record["ids"]), shown=record["shown"],
                   unk_token=record.get("unk_token"), limit=record.get("limit"))


def problems(readers: Sequence[TokenizerReader], texts: Iterable[str]) -> dict[str, str]:
    """Each text some tokenizer cannot read whole -> why, in words (the others: absent)."""
    texts = list(dict.fromkeys(texts))
    said: dict[str, list[str]] = {}
    for reader in readers:
        for text, reading in reader.readings(texts).items():
            why = reading.problem(reader.name)
            if why:
                said.setdefault(text, []).append(why)
    return {text: "; ".join(dict.fromkeys(said[text])) for text in texts if text in said}


def prompt_problems(tokenizers: Sequence[tuple[str, Any]], texts: Iterable[str]
                    ) -> dict[str, str]:
    """``problems`` with tokenizers already loaded, by name (a loaded pipeline's)."""
    return problems([TokenizerReader(name, tokenizer=tokenizer) for name, tokenizer in tokenizers],
                    texts)


def memo_folder(cache_dir: Path | None, no_cache: bool = False) -> Path | None:
    """Where readings are kept: ``<cache>/tokens`` (None with ``--t2i-no-cache``)."""
    return None if no_cache or cache_dir is None else Path(cache_dir) / "tokens"


def pipeline_readers(model: str | os.PathLike[str] | None, memo: Path | None
                     ) -> list[TokenizerReader]:
    """The tokenizers a diffusers pipeline folder declares (``model_index.json``), by folder
    name; none for a hub id not on disk. Nothing is loaded: ``model_index.json`` is read."""
    from .vocabulary import TOKENIZER_FOLDERS

    if not model:
        return []
    root = Path(model)
    try:
        declared = read_json(root / "model_index.json")
    except (OSError, ValueError):
        return []
    if not isinstance(declared, dict):
        return []
    return [TokenizerReader(folder, folder=root / folder, memo=memo)
            for folder in TOKENIZER_FOLDERS
            if isinstance(declared.get(folder), list) and None not in declared[folder]
            and (root / folder).is_dir()]


def model_reader(model: str | os.PathLike[str] | None, memo: Path | None
                 ) -> TokenizerReader | None:
    """The tokenizer of a transformers model folder (a CLIP judge's); None without one."""
    if not model or not Path(model).is_dir() or tokenizer_fingerprint(Path(model)) is None:
        return None
    return TokenizerReader("tokenizer", folder=Path(model), memo=memo)
