"""``python -m pytest_t2ibias prefetch [PATHS] [--t2i-... options]``: fill the cache.

Collects the suites as ``pytest`` would with the same options, computes the session plan
(``prefetch``: every image and answer the selected checks can name up front) and runs no
check, so the ``pytest`` run that follows on the same cache generates nothing. Run it under
``accelerate launch --num_processes N [--cpu]`` to split the plan's requests between N
processes (one a GPU) with accelerate's ``PartialState().split_between_processes``; they
meet at ``wait_for_everyone()`` between the images and the answers. The processes share
the cache directory (``--t2i-cache-dir``), whose per-key claims keep them from computing
anything twice.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pytest

USAGE = """usage: python -m pytest_t2ibias prefetch [PATHS...] [pytest and --t2i-* options]

  prefetch   compute and cache every image and answer the selected checks need, run no check
             (under `accelerate launch --num_processes N` the work is split between N processes)"""


class Prefetch:
    """A pytest plugin that replaces the test loop with the session plan."""

    def __init__(self) -> None:
        self.planned = 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:  # collection errors: let pytest report them
            return False
        from ._session import session_of
        from .prefetch import prefetch
        from .suite.collect import planned_checks

        share, barrier, rank = _distribution()
        t2i = session_of(session.config)
        self.planned = prefetch(planned_checks(session.items), t2i.instrument,
                                share=share, barrier=barrier, on_error=_warn)
        work = t2i.requests.counters
        line = (f"prefetch{rank}: {self.planned} checks planned; {work.images_generated} images "
                f"generated, {work.images_from_cache} from the cache; {work.answers_scored} "
                f"answers scored, {work.answers_from_cache} from the cache")
        session.config.pluginmanager.get_plugin("terminalreporter").write_line(line)
        return True


def _distribution() -> tuple[Callable[[list], list] | None, Callable[[], None] | None, str]:
    """This process's share and the barrier under ``accelerate launch`` (or torchrun)."""
    if int(os.environ.get("WORLD_SIZE", "1")) < 2:
        return None, None, ""
    import torch
    from accelerate import PartialState

    # Without a GPU (or told so) the processes meet over gloo: accelerate's MULTI_CPU.
    told = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    state = PartialState(cpu=told or not torch.cuda.is_available())

    def share(requests: list) -> list:
        with state.split_between_processes(requests) as mine:
            return list(mine)

    return share, state.wait_for_everyone, f"[{state.process_index}/{state.num_processes}]"


def _warn(item, error: BaseException) -> None:
    print(f"prefetch: {item.suite.name} {item.check.id} {item.subject}: not planned "
          f"({type(error).__name__}: {error}); its test run computes it", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] != "prefetch":
        print(f"unknown command {argv[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    # this package is imported already (python -m): its modules cannot be assertion-rewritten
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return int(pytest.main(["-p", "no:cacheprovider", *quiet, *argv[1:]], plugins=[Prefetch()]))


if __name__ == "__main__":
    sys.exit(main())
