"""How many threads torch computes with: the CPUs this process may use, less those others
keep busy, shared among xdist workers (issue #36).

torch's default is one intra-op thread per CPU of the machine. Beside a busy neighbour
(another job on a shared CI box) or split among xdist workers, that is more threads than free
CPUs: OpenMP threads wait at every barrier for a sibling the kernel has descheduled, and the
toy run took five times longer than with one thread. The choice is made without torch (for
the header) from the CPU affinity, the 1-minute load average and the xdist worker count, and
given to torch at the first model load. The user's choice wins: ``--t2i-threads``,
``OMP_NUM_THREADS``/``MKL_NUM_THREADS``, or ``torch.set_num_threads`` called before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ThreadChoice:
    """The threads torch gets (None: left as it is) and why, for the header."""

    threads: int | None
    why: str
    busy: float | None = None
    """The CPUs found busy (None: not measured), handed to xdist workers."""

    def header(self) -> str:
        said = f"torch threads {self.threads}" if self.threads else "torch threads left as set"
        return f"t2ibias: {said} ({self.why})"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or taskset's share)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def busy_cpus(samples: int = 5) -> float:
    """CPUs other processes keep busy now: the runnable tasks of ``/proc/loadavg`` (this
    process not counted), the mean of a few reads 2 ms apart; the 1-minute load average
    where there is no ``/proc`` (it lags a minute behind)."""
    import time

    counts = []
    for i in range(samples):
        try:
            running = Path("/proc/loadavg").read_text().split()[3].split("/")[0]
            counts.append(max(0, int(running) - 1))
        except (OSError, IndexError, ValueError):
            try:
                return os.getloadavg()[0]
            except (OSError, AttributeError):
                return 0.0
        if i + 1 < samples:
            time.sleep(0.002)
    return sum(counts) / len(counts)


def choose_threads(option: int | None, *, workers: int = 1,
                   environ: Mapping[str, str] = os.environ,
                   cpus: int | None = None, busy: float | None = None) -> ThreadChoice:
    """``option``: ``--t2i-threads``. Otherwise, unless a thread variable is set, the usable
    CPUs less the busy ones (rounded), divided among ``workers`` (xdist), at least 1."""
    if option:
        return ThreadChoice(option, "--t2i-threads")
    chosen = [name for name in THREAD_VARIABLES if environ.get(name)]
    if chosen:
        return ThreadChoice(None, f"{chosen[0]}={environ[chosen[0]]}")
    cpus = usable_cpus() if cpus is None else cpus
    busy = busy_cpus() if busy is None else busy
    free = max(1, cpus - round(min(busy, cpus)))
    threads = max(1, free // max(1, workers))
    return ThreadChoice(threads, f"{cpus} usable CPUs, {busy:.1f} busy"
                        + (f", {workers} xdist workers" if workers > 1 else "")
                        + "; --t2i-threads or OMP_NUM_THREADS to choose", busy=busy)


_applied: list[ThreadChoice] = []
"""torch's threads are the process's: chosen once (``decide``), set once (``apply``)."""


def decide(choice: ThreadChoice) -> None:
    """What the first model load gives torch (the session calls this at startup)."""
    _applied[:] = [choice]


def apply() -> int | None:
    """At the first model load: ``torch.set_num_threads`` with the decided count, unless
    torch's threads were set already (not its default). Returns the threads set, or None."""
    choice = _applied[0] if _applied else None  # the one choice ``decide`` left
    if choice is None or choice.threads is None:
        return None
    _applied[:] = [ThreadChoice(None, "applied")]
    import torch

    if torch.get_num_threads() != _torch_default() and choice.why != "--t2i-threads":
        return None  # torch.set_num_threads was called before us: the user chose
    torch.set_num_threads(choice.threads)
    return choice.threads


def _torch_default() -> int:
    """torch's own default intra-op threads: one per usable CPU (physical cores where it
    can tell; the affinity bound is what a set-by-nobody torch reports on Linux)."""
    return usable_cpus()
