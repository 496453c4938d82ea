"""Cache writes behind the computation: one background thread, in the order given.

Encoding a 512-px PNG takes about 44 ms on the 2-CPU development box (a 1024-px one 177 ms),
a large share of what a GPU takes to generate the image, and a raw diffusers script does not
pay it at all. zlib and hashlib let go of the GIL, so on a thread of its own the encoding and
the write overlap the next batch's generation. The request layer queues a batch's claim
releases behind its writes, so another process waiting on a claim finds the entry on disk,
and it waits for the queue before it returns: a write that failed raises there, never lost.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

log = logging.getLogger("pytest_t2ibias")


class WriteBehind:
    """Runs queued tasks (cache writes, then the claims' releases) on one thread, in order."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._queued: deque[Future[None]] = deque()

    def submit(self, task: Callable[[], None]) -> None:
        if self._executor is None:  # the thread starts with the first write
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="t2ibias-cache-writer")
        self._queued.append(self._executor.submit(task))

    def wait(self) -> None:
        """Until every queued task has run; the first that failed raises here (the tasks
        after it still ran: a failed write never keeps a claim from being released)."""
        first = self._finish()
        if first is not None:
            raise first

    def wait_quietly(self) -> None:
        """``wait`` on a path already raising: the tasks run, a failure is only logged."""
        failed = self._finish()
        if failed is not None:
            log.warning("a cache write failed while the computation failed: %s", failed)

    def _finish(self) -> BaseException | None:
        first: BaseException | None = None
        while self._queued:
            error = self._queued.popleft().exception()
            first = first or error
        return first
