"""``batch_size=auto``: as many items a forward pass as the device's free memory holds.

On a CUDA device a first forward pass is measured: its peak memory above what was allocated
before, divided by its items, is the cost of an item (an over-estimate: it includes the
pass's fixed cost), so ``HEADROOM`` of the free memory (the driver's free plus what torch
holds unallocated) divided by it is the batch, capped at ``CAP``.

On a GPU a forward pass costs about the same for one item as for dozens, so the first pass
is never a lone item beside the rest (that was a second call, 0.3 to 1.6 s on an H100). A
judge's first pass is the first batch itself, up to ``CAP`` items, halved after running out
of memory, and its result is kept. A generator's is a whole sampling loop that may run out
of memory only at its VAE decode, so it sizes on a *probe*: one image through the same call
cut to ``generator.PROBE_STEPS`` steps (each step's activations, the decode and the text encoders are
what peak), whose image is dropped; every image is then made in full batches. The probe's
cost an item is *remembered* beside the cache (``memo``: one small JSON file per pipeline,
sampling and device), so only a generator's first run ever probes; a later run sizes its
batch from the remembered cost and the memory free now, and halves it if the device runs out
anyway. Elsewhere memory is rarely the limit and a CPU's throughput stops growing after a
few items for a large model, so ``auto`` starts at the role's ``CPU_DEFAULT``; a small one
is bound by each call's Python and scheduler work, not its arithmetic (toy-sd, 2 CPUs: 12.8
images a second in batches of 8, 32.6 in batches of 64), so the batch *grows*: it doubles
after each full pass that was not ``SLOWER`` per item than the one before, while the
doubled pass's memory (the process's peak growth per item, times the doubled batch) fits
``HEADROOM`` of the memory available, up to ``CAP``; every pass's items are kept, so growing
costs nothing but the smaller passes' slowness. Where the platform gives no peak memory or
available memory (outside Linux), it stays at ``CPU_DEFAULT``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

AUTO = "auto"
HEADROOM = 0.8
CAP = 64
CPU_DEFAULT = {"generator": 8, "vqa": 16, "classifier": 16}
SLOWER = 1.1
"""A CPU pass of twice the items that took more than this much time an item than the one
before is too slow: the batch goes back to the size before. Up to it the doubled size is kept
and doubled again: one pass's timing on a busy 2-CPU machine varies by about 10% (a tie goes
to the larger batch, which a per-call overhead never makes slower)."""

_clock = time.perf_counter

T = TypeVar("T")


def fit_to_memory(item_bytes: int, free_bytes: int, *, headroom: float = HEADROOM,
                  cap: int = CAP) -> int:
    """Items that fit in ``headroom`` of ``free_bytes`` at ``item_bytes`` each (1 to ``cap``)."""
    if item_bytes <= 0:
        return cap
    return max(1, min(cap, int(free_bytes * headroom // item_bytes)))


def memo_path(folder: Path | None, device: Any, *what: object) -> Path | None:
    """The file remembering an item's cost for ``what`` (a backend's fingerprint and
    sampling) on this CUDA device, torch and diffusers: None without a folder or off CUDA."""
    if folder is None or getattr(device, "type", str(device)) != "cuda":
        return None
    from importlib.metadata import PackageNotFoundError, version

    import torch

    try:
        diffusers = version("diffusers")
    except PackageNotFoundError:
        diffusers = None
    card = torch.cuda.get_device_properties(device)
    key = json.dumps([card.name, card.total_memory, torch.__version__, diffusers,
                      *map(str, what)])
    return Path(folder) / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


class AutoBatch:
    """A backend's batch size, fixed or found on its first forward pass (or remembered from
    an earlier run's, ``memo``)."""

    def __init__(self, size: int | str, *, role: str, device: Any, memo: Path | None = None
                 ) -> None:
        self.role = role
        self.device = device
        self.size: int | None = None if size == AUTO else max(1, int(size))
        self.found_by: str = "given" if self.size is not None else ""
        self.memo = memo
        """Where an ``auto`` size's measured cost an item is kept (``memo_path``)."""
        self.growing = False
        """A CPU ``auto`` size still being doubled (``timed``)."""
        self._last: tuple[int, float] | None = None
        self.remembered = False
        """Sized from ``memo`` (not measured in this run): halved if the device runs out."""

    def from_memo(self) -> bool:
        """Size an ``auto`` batch from the cost an earlier run measured, and the memory free
        now; False (nothing sized) without a usable memo."""
        if self.size is not None or self.memo is None:
            return False
        try:
            from .._files import read_json

            record = read_json(self.memo, 4096)
            item, measured = int(record["item_bytes"]), str(record["measured"])
        except (OSError, ValueError, KeyError, TypeError):
            return False
        if item <= 0:
            return False
        free = _free_bytes(self.device)
        self.size, self.remembered = fit_to_memory(item, free), True
        self.found_by = (f"{item / 2**20:.0f} MiB an item (remembered: measured {measured}), "
                         f"{free / 2**30:.1f} GiB free")
        return True

    def _remember(self, item: int) -> None:
        if self.memo is None:
            return
        record = {"item_bytes": int(item), "role": self.role,
                  "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
        with contextlib.suppress(OSError):  # a memo is a saving, never a failure
            self.memo.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.memo.parent, suffix=".tmp")
            with os.fdopen(handle, "w") as file:
                json.dump(record, file)
            os.replace(temporary, self.memo)

    def halve_after_running_out(self) -> bool:
        """After the device ran out of memory at a remembered size: half the size, and the
        memo forgotten; False when there is nothing left to halve."""
        if not self.remembered or self.size is None or self.size == 1:
            return False
        self.size //= 2
        self.found_by += f"; halved to {self.size} after running out of memory"
        if self.memo is not None:
            with contextlib.suppress(OSError):
                self.memo.unlink()
        return True

    def first_pass(self, run_some: Callable[[int], T], count: int = 1) -> tuple[T, int] | None:
        """Size the batch if it is ``auto``: on CUDA by running ``run_some(k)``, a forward
        pass on the first ``k`` items (``count``, halved each time the device runs out of
        memory); (its result, ``k``) for the caller to keep, or None when nothing was run."""
        if self.size is not None:
            return None
        if getattr(self.device, "type", str(self.device)) != "cuda":
            self.size = CPU_DEFAULT.get(self.role, 8)
            self.growing = _peak_rss() is not None and _available_bytes() is not None
            self.found_by = "cpu: growing" if self.growing else "cpu default"
            return None
        import torch

        while True:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            before = torch.cuda.memory_allocated(self.device)
            try:
                result = run_some(count)
            except torch.cuda.OutOfMemoryError:
                if count == 1:
                    raise
                torch.cuda.empty_cache()
                count //= 2
                continue
            torch.cuda.synchronize(self.device)
            item = (torch.cuda.max_memory_allocated(self.device) - before) // count
            free = _free_bytes(self.device)
            self.size = fit_to_memory(item, free)
            self.found_by = (f"{item / 2**20:.0f} MiB an item (a pass of {count}), "
                             f"{free / 2**30:.1f} GiB free")
            self._remember(item)
            return result, count

    def timed(self, run: Callable[[list[Any]], T], chunk: list[Any]) -> T:
        """``run(chunk)``, a full pass at a growing CPU size, timed; the size doubles unless
        this pass was ``SLOWER`` an item than the last (then it goes back to the last's size),
        or twice its memory an item would not fit, or twice the size passes ``CAP``."""
        count = len(chunk)
        peak, start = _peak_rss() or 0, _clock()
        result = run(chunk)
        seconds = (_clock() - start) / count
        item = max(0, (_peak_rss() or 0) - peak) // count
        last = self._last
        if last is not None and seconds > last[1] * SLOWER:
            self.size, self.growing = last[0], False
            self.found_by = (f"cpu: {last[0]} ({1 / last[1]:.1f} items/s; "
                             f"{count}: {1 / seconds:.1f})")
            return result
        self._last = (count, seconds)
        available = _available_bytes() or 0
        if 2 * count > CAP or 2 * count * item > HEADROOM * available:
            self.growing = False
            why = "the cap" if 2 * count > CAP else f"{available / 2**30:.1f} GiB available"
            self.found_by = f"cpu: {count} ({1 / seconds:.1f} items/s; {why})"
        else:
            self.size = 2 * count
        return result


def _peak_rss() -> int | None:
    """The process's peak resident memory in bytes; None where the platform gives none."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # macOS: bytes


def _available_bytes() -> int | None:
    """Memory this process can still take: Linux's MemAvailable, within a cgroup's limit;
    None where it cannot be read."""
    try:
        with open("/proc/meminfo") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo)
        available = int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None
    with contextlib.suppress(OSError, ValueError):  # cgroup v2; "max": no limit
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        if limit != "max":
            available = min(available, int(limit) - int(used))
    return available


def _free_bytes(device: Any) -> int:
    """What a CUDA device can still give: the driver's free memory and what torch holds
    unallocated."""
    import torch

    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


R = TypeVar("R")


def batched(items: list[Any], batch: AutoBatch, run: Callable[[list[Any]], R],
            probe: Callable[[Any], object] | None = None) -> list[R]:
    """``run`` over ``items`` in batches of ``batch.size``. An ``auto`` batch is first sized
    on ``probe(first item)`` (its result dropped) when there is a probe and no earlier run's
    cost remembered (``AutoBatch.from_memo``), else on the first batch itself (kept as the
    first result)."""
    results: list[R] = []
    start = 0
    if batch.size is None and items and probe is not None:
        batch.from_memo()
    if batch.remembered:  # no probe ran: a size that runs out of memory is halved
        return _halving(items, batch, run)
    if batch.size is None and items and probe is not None:
        # A probe is cut short, and a pipeline may refuse so few steps (a scheduler's
        # warm-up): then the batch is sized on a first image made in full, as without one.
        with contextlib.suppress(Exception):
            batch.first_pass(lambda count: probe(items[0]))
    if batch.size is None and items:
        first = batch.first_pass(lambda count: run(items[:count]),
                                 count=1 if probe is not None else min(len(items), CAP))
        if first is not None:
            results.append(first[0])
            start = first[1]
    while start < len(items):
        size = batch.size or 1
        chunk = items[start:start + size]
        if batch.growing and len(chunk) == size:
            results.append(batch.timed(run, chunk))
        else:
            results.append(run(chunk))
        start += len(chunk)
    return results


def _halving(items: list[Any], batch: AutoBatch, run: Callable[[list[Any]], R]) -> list[R]:
    """``run`` over ``items`` in batches of a remembered size; if the device runs out of
    memory, the size is halved (``AutoBatch.halve_after_running_out``) and the batch retried."""
    import torch

    results: list[R] = []
    while items:
        size = batch.size or 1
        try:
            results.append(run(items[:size]))
        except torch.cuda.OutOfMemoryError:
            if not batch.halve_after_running_out():
                raise
            torch.cuda.empty_cache()
            continue
        items = items[size:]
    return results
