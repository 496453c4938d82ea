"""What a process measures with: the models, the request layer over the cache and the lock
readers, each built on first use.

One factory for the pytest session and for scripts (``T2IBias.standalone``), so both wire
the same pieces the same way. Nothing is built until a check asks: collection never loads a
model, and a warm run, whose results are all cached, makes no backend at all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy and the store load with the first check (issue #14)
    from ._settings import Settings
    from ._test_call import Sightings
    from .instrument import Instrument, Models
    from .locks.bgps import BGPSLocks
    from .locks.counterfactual import PromptLocks
    from .plan import Plan
    from .store.request_layer import Progress, RequestLayer


class Equipment:
    """The models (roles -> backends, made by ``provider``), the request layer (memo,
    dedupe and batching over the cache, with its remote tier and writes behind) and the
    counterfactual and BGPS lock readers of one process.

    ``provider`` makes backends by model id (``backends._providers``: pytest's hooks or the
    built-ins); ``progress`` is called once, when the request layer is built, for where its
    progress goes (None: nowhere)."""

    def __init__(self, settings: Settings, provider: Any, *,
                 progress: Callable[[], Progress | None] = lambda: None) -> None:
        self.settings = settings
        self.provider = provider
        self._progress = progress

    @cached_property
    def models(self) -> Models:
        from .instrument import Models

        return Models(self.settings, self.provider)

    @cached_property
    def requests(self) -> RequestLayer:
        from .store.cache import Cache
        from .store.request_layer import RequestLayer

        return RequestLayer(Cache.from_settings(self.settings),
                            batch_size=self.settings.batch_size.requests(), progress=self._progress())

    @cached_property
    def counterfactual_locks(self) -> PromptLocks:
        """``<suite>.t2i.lock.json``: the LLM loads only to write one."""
        from .locks.counterfactual import PromptLocks

        return PromptLocks(llm_model=self.settings.llm, load_llm=lambda: self.models.llm,
                           update=self.settings.update_locks, max_new_tokens=self.settings.llm_tokens,
                           frozen=self.settings.frozen_locks)

    @cached_property
    def bgps_locks(self) -> BGPSLocks:
        """``<suite>.t2i.bgps.lock.json``: the LLM, UNet and probe load only to search."""
        from .locks.bgps import BGPSLocks

        return BGPSLocks(self.settings, self.models, update=self.settings.update_locks)

    def instrument(self, plan: Plan, sightings: Sightings | None = None) -> Instrument:
        """An instrument sampling as ``plan`` says; ``sightings`` notes what its judges saw."""
        from .instrument import Instrument

        return Instrument(self.models, self.requests, plan, sightings)

    # -- what was used (read at the end; reading builds nothing) --------------------------------

    @property
    def started(self) -> bool:
        """Whether anything that can load a model or touch the cache has been built."""
        return "models" in self.__dict__ or "requests" in self.__dict__

    @property
    def counters(self) -> dict[str, int]:
        """Images and answers computed and read from the cache; empty if nothing asked."""
        if "requests" not in self.__dict__:
            return {}
        return dict(self.requests.counters.__dict__)

    def flush(self) -> None:
        """Finish the cache writes still behind (``RequestLayer.flush``); builds nothing."""
        if "requests" in self.__dict__:
            self.requests.flush()

    def backends_used(self) -> list[dict[str, str]]:
        """The backends made: role, model, fingerprint (``Models.made``)."""
        return self.models.made() if "models" in self.__dict__ else []
