"""What checks measure with, built in one place for the pytest session and for scripts alike:
the models (roles -> backends), the request layer over the disk cache, and the lock files.

Each part is built on first use: collection, ``--t2i-plan`` and a warm run build only what
they touch, and a warm run loads no model.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._settings import Settings
    from .instrument import Models
    from .locks.bgps import BGPSLocks
    from .locks.counterfactual import PromptLocks
    from .store.request_layer import RequestLayer


class Equipment:
    """The models, request layer and lock files of one run.

    ``provider`` makes the backends (the pytest hooks, or the built-ins of a script), and is
    itself made on first use; ``progress`` makes the request layer's progress display."""

    def __init__(self, settings: Settings, provider: Callable[[], Any],
                 progress: Callable[[], Any] = lambda: None) -> None:
        self.settings = settings
        self._provider = provider
        self._progress = progress

    @cached_property
    def models(self) -> Models:
        from .instrument import Models

        return Models(self.settings, self._provider())

    @cached_property
    def requests(self) -> RequestLayer:
        from .store.cache import Cache
        from .store.request_layer import RequestLayer

        return RequestLayer(Cache.from_settings(self.settings),
                            batch_size=self.settings.batch_size.requests(),
                            progress=self._progress())

    @cached_property
    def locks(self) -> PromptLocks:
        """Counterfactual phrasings (``<suite>.t2i.lock.json``), chosen by ``--t2i-llm``."""
        from .locks.counterfactual import PromptLocks

        return PromptLocks(llm_model=self.settings.llm, load_llm=lambda: self.models.llm,
                           update=self.settings.update_locks)

    @cached_property
    def bgps_locks(self) -> BGPSLocks:
        """The prompts BGPS searches found (``<suite>.t2i.bgps.lock.json``)."""
        from .locks.bgps import BGPSLocks

        return BGPSLocks(self.settings, self.models, update=self.settings.update_locks)

    def built(self, part: str) -> bool:
        """Whether ``part`` ("models", "requests", "locks", "bgps_locks") has been built."""
        return part in self.__dict__

    @property
    def started(self) -> bool:
        """Whether anything that can load a model or touch the cache has been built."""
        return self.built("models") or self.built("requests")
