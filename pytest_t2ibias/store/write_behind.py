"""Cache writes behind the computation: a few background threads, each release after its writes.

Encoding a 512-px PNG takes about 44 ms on the 2-CPU development box (67 ms on the H100 box's
CPU, a 1024-px one 177 to 230 ms), a large share of what a GPU takes to generate the image,
and a raw diffusers script does not pay it at all. zlib and hashlib let go of the GIL, so the
writes run on a small pool (``WRITER_THREADS``): several PNGs encode at once, overlapped with
the next batch's generation. A claim's release is queued ``after`` the writes before it, so
another process waiting on a claim finds the entry on disk.

The request layer does not wait for an images call's last writes (issue #46: nothing came
after them to overlap with): the images are in memory already; ``wait`` (the session's flush,
or the layer before it waits on other processes' claims) finishes them, and a write that
failed raises there, never lost. A process killed meanwhile loses the unwritten entries only:
each is written atomically with its record first, and its claim dies with the process.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_all

log = logging.getLogger("pytest_t2ibias")

WRITER_THREADS = max(1, min(4, os.cpu_count() or 1))
"""Encoders at once: PNG encoding scales with cores until the disk is the limit."""


class WriteBehind:
    """Runs queued tasks (cache writes, then the claims' releases) on a few threads."""

    def __init__(self, threads: int = WRITER_THREADS) -> None:
        self._threads = threads
        self._executor: ThreadPoolExecutor | None = None
        self._queued: deque[Future[None]] = deque()

    def submit(self, task: Callable[[], None], *, after: bool = False) -> None:
        """Queue ``task``; with ``after``, it runs once every task queued before it has.

        The pool takes tasks first in, first out, so the tasks an ``after`` one waits for have
        all started before it does: it never waits on one that is waiting for a thread.
        """
        if self._executor is None:  # the threads start with the first write
            self._executor = ThreadPoolExecutor(self._threads,
                                                thread_name_prefix="t2ibias-cache-writer")
        if after:
            before = list(self._queued)

            def ordered() -> None:
                wait_for_all(before)
                task()

            self._queued.append(self._executor.submit(ordered))
        else:
            self._queued.append(self._executor.submit(task))

    @property
    def pending(self) -> int:
        """Tasks queued and not yet finished."""
        return sum(not future.done() for future in self._queued)

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
