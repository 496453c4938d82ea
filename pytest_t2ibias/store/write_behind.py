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
failed raises there (or from the next call, ``raise_failed``), never lost. A process killed
meanwhile loses the unwritten entries only: each is written atomically with its record
first, and its claim dies with the process. Only unfinished tasks are held, at most
``MAX_PENDING`` (see ``WriteBehind``): a run's writes cost memory in proportion to those in
flight, not to every write it made.
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
MAX_PENDING = 256
"""Tasks in flight at most (a write, or a claim's release, each): a few batches' worth, so
generation is never held up by the writers unless they fall that far behind."""


class WriteBehind:
    """Runs queued tasks (cache writes, then the claims' releases) on a few threads.

    Only unfinished tasks are held: finished ones are dropped from the front of the queue
    on each ``submit`` (the first failure kept for ``wait``), so a long run holds about as
    many futures as writes are in flight, not one per write ever made. An ``after`` task
    waits on the previous ``after`` task and the tasks queued since it (that one waited on
    everything before it), a batch's worth, never the whole queue. At most ``max_pending``
    tasks are held: past that, ``submit`` waits for the oldest, so images the writers have
    not encoded yet cannot pile up in memory.
    """

    def __init__(self, threads: int = WRITER_THREADS, *,
                 max_pending: int = MAX_PENDING) -> None:
        self._threads = threads
        self._max_pending = max(1, max_pending)
        self._executor: ThreadPoolExecutor | None = None
        self._queued: deque[Future[None]] = deque()
        self._failed: BaseException | None = None
        """The first failure among the tasks already dropped from ``_queued``."""
        self._last_after: Future[None] | None = None
        self._since_last_after: list[Future[None]] = []

    def submit(self, task: Callable[[], None], *, after: bool = False) -> None:
        """Queue ``task``; with ``after``, it runs once every task queued before it has.

        The pool takes tasks first in, first out, so the tasks an ``after`` one waits for have
        all started before it does: it never waits on one that is waiting for a thread.
        """
        if self._executor is None:  # the threads start with the first write
            self._executor = ThreadPoolExecutor(self._threads,
                                                thread_name_prefix="t2ibias-cache-writer")
        while self._queued and (self._queued[0].done()
                                or len(self._queued) >= self._max_pending):
            self._note(self._queued.popleft().exception())  # waits when the writers are behind
        if after:
            before = [future for future in (self._last_after, *self._since_last_after)
                      if future is not None and not future.done()]

            def ordered() -> None:
                wait_for_all(before)
                task()

            future = self._executor.submit(ordered)
            self._last_after, self._since_last_after = future, []
        else:
            future = self._executor.submit(task)
            if len(self._since_last_after) >= self._max_pending:  # no ``after`` in a while
                self._since_last_after = [f for f in self._since_last_after if not f.done()]
            self._since_last_after.append(future)
        self._queued.append(future)

    @property
    def pending(self) -> int:
        """Tasks queued and not yet finished."""
        return sum(not future.done() for future in self._queued)

    @property
    def held(self) -> int:
        """Futures held (finished ones leave from the front on the next submit): at most
        ``max_pending`` however many tasks were submitted."""
        return len(self._queued)

    def raise_failed(self) -> None:
        """Raise the first failure among the tasks finished so far, without waiting for the
        others (the next call's check reports it, as an inline write's would have been)."""
        for future in self._queued:
            if future.done():
                self._note(future.exception())
        self._queued = deque(future for future in self._queued
                             if not future.done() or future.exception() is None)
        first, self._failed = self._failed, None
        if first is not None:
            raise first

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

    def _note(self, error: BaseException | None) -> None:
        if self._failed is None:
            self._failed = error

    def _finish(self) -> BaseException | None:
        while self._queued:
            self._note(self._queued.popleft().exception())
        self._last_after, self._since_last_after = None, []
        first, self._failed = self._failed, None
        return first
