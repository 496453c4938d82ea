"""The one error type backends raise when a model cannot be loaded or an input is missing."""

from __future__ import annotations

from ..verdict import CheckError


class BackendError(CheckError):
    """A model or image source that cannot be used, said in the user's terms.

    The message names the model id or path, the option that named it (e.g. ``--t2i-model``)
    and what to do. ``original`` keeps the library exception for debugging without
    printing its traceback from deep inside diffusers or transformers.
    """

    def __init__(self, message: str, *, original: BaseException | None = None) -> None:
        super().__init__(message)
        self.original = original
