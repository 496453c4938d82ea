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
what peak), whose image is dropped; every image is then made in full batches. Elsewhere
memory is rarely the limit and a CPU's throughput stops growing after a few items, so
``auto`` is the role's fixed ``CPU_DEFAULT``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

AUTO = "auto"
HEADROOM = 0.8
CAP = 64
CPU_DEFAULT = {"generator": 8, "vqa": 16, "classifier": 16}

T = TypeVar("T")


def fit_to_memory(item_bytes: int, free_bytes: int, *, headroom: float = HEADROOM,
                  cap: int = CAP) -> int:
    """Items that fit in ``headroom`` of ``free_bytes`` at ``item_bytes`` each (1 to ``cap``)."""
    if item_bytes <= 0:
        return cap
    return max(1, min(cap, int(free_bytes * headroom // item_bytes)))


class AutoBatch:
    """A backend's batch size, fixed or found on its first forward pass."""

    def __init__(self, size: int | str, *, role: str, device: Any) -> None:
        self.role = role
        self.device = device
        self.size: int | None = None if size == AUTO else max(1, int(size))
        self.found_by: str = "given" if self.size is not None else ""

    def first_pass(self, run_some: Callable[[int], T], count: int = 1) -> tuple[T, int] | None:
        """Size the batch if it is ``auto``: on CUDA by running ``run_some(k)``, a forward
        pass on the first ``k`` items (``count``, halved each time the device runs out of
        memory); (its result, ``k``) for the caller to keep, or None when nothing was run."""
        if self.size is not None:
            return None
        if getattr(self.device, "type", str(self.device)) != "cuda":
            self.size, self.found_by = CPU_DEFAULT.get(self.role, 8), "cpu default"
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
            free, _ = torch.cuda.mem_get_info(self.device)
            unallocated = torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)
            self.size = fit_to_memory(item, free + unallocated)
            self.found_by = (f"{item / 2**20:.0f} MiB an item (a pass of {count}), "
                             f"{(free + unallocated) / 2**30:.1f} GiB free")
            return result, count


R = TypeVar("R")


def batched(items: list[Any], batch: AutoBatch, run: Callable[[list[Any]], R],
            probe: Callable[[Any], object] | None = None) -> list[R]:
    """``run`` over ``items`` in batches of ``batch.size``. An ``auto`` batch is first sized
    on ``probe(first item)`` (its result dropped) when there is a probe, else on the first
    batch itself (kept as the first result)."""
    results: list[R] = []
    start = 0
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
    size = batch.size or 1
    for begin in range(start, len(items), size):
        results.append(run(items[begin:begin + size]))
    return results
