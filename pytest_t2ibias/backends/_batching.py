"""``batch_size=auto``: as many items a forward pass as the device's free memory holds.

On a CUDA device a first forward pass runs on one item and its peak memory above what was
allocated before is the cost of an item (an over-estimate: it includes the pass's fixed
cost), so ``HEADROOM`` of the free memory (the driver's free plus what torch holds
unallocated) divided by it is the batch, capped at ``CAP``. A judge's pass is short, and its
result is kept. A generator's is a whole sampling loop, and on a GPU a call costs about the
same for one image as for sixteen, so it sizes on a *probe* instead: the same call cut to a
step or two (each step's activations, the VAE decode and the text encoders are what peak),
whose image is thrown away, and every image is then made in full batches. Elsewhere memory is rarely the
limit and a CPU's throughput stops growing after a few items, so ``auto`` is the role's
fixed ``CPU_DEFAULT``.
"""

from __future__ import annotations

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

    def first_pass(self, run_one: Callable[[], T]) -> T | None:
        """Size the batch if it is ``auto``: on CUDA by running ``run_one`` (a forward pass on
        one item, whose result the caller keeps); None when nothing was run."""
        if self.size is not None:
            return None
        if getattr(self.device, "type", str(self.device)) != "cuda":
            self.size, self.found_by = CPU_DEFAULT.get(self.role, 8), "cpu default"
            return None
        import torch

        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        before = torch.cuda.memory_allocated(self.device)
        result = run_one()
        torch.cuda.synchronize(self.device)
        item = torch.cuda.max_memory_allocated(self.device) - before
        free, _ = torch.cuda.mem_get_info(self.device)
        unallocated = torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)
        self.size = fit_to_memory(item, free + unallocated)
        self.found_by = f"{item / 2**20:.0f} MiB an item, {(free + unallocated) / 2**30:.1f} GiB free"
        return result


R = TypeVar("R")


def batched(items: list[Any], batch: AutoBatch, run: Callable[[list[Any]], R],
            probe: Callable[[Any], object] | None = None) -> list[R]:
    """``run`` over ``items`` in batches of ``batch.size``; an ``auto`` batch is first sized
    on ``probe(first item)`` (its result dropped), or without a probe on a pass over the first
    item (kept as the first result)."""
    results: list[R] = []
    start = 0
    if batch.size is None and items and probe is not None:
        batch.first_pass(lambda: probe(items[0]))
    if batch.size is None and items:
        first = batch.first_pass(lambda: run(items[:1]))
        if first is not None:
            results.append(first)
            start = 1
    size = batch.size or 1
    for begin in range(start, len(items), size):
        results.append(run(items[begin:begin + size]))
    return results
