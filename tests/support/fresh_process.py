"""Run one operation in a fresh Python process and read its own traced memory peak.

A memory bound measured inside the test process shares it with everything a full run did
before (its high-water mark, its caches, whoever else started tracemalloc); a fresh process
holds only the operation and the imports it needs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MARK = "fresh-process-result: "
_RUNNER = """\
import json
import tracemalloc

{source}

tracemalloc.start()  # after the imports above: the operation's own peak
try:
    result = operation()
finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
print({mark!r} + json.dumps({{"peak_mb": peak / 2**20, "result": result}}), flush=True)
"""


@dataclass(frozen=True)
class FreshRun:
    peak_mb: float
    result: Any  # what ``operation()`` returned (JSON)
    stdout: str  # the operation's own output, the result line removed
    stderr: str


def traced_in_fresh_process(source: str, cwd: Path) -> FreshRun:
    """Run ``source`` (imports, then a ``def operation()`` returning JSON) in a new interpreter
    in ``cwd``; the peak is tracemalloc's, from the call of ``operation`` to its return."""
    script = _RUNNER.format(source=textwrap.dedent(source), mark=_MARK)
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True,
                          text=True, check=False)
    lines = done.stdout.splitlines()
    found = [line for line in lines if line.startswith(_MARK)]
    assert done.returncode == 0 and found, \
        f"the fresh process failed (exit status {done.returncode}):\n{done.stderr}"
    reply = json.loads(found[-1][len(_MARK):])
    return FreshRun(reply["peak_mb"], reply["result"],
                    "\n".join(line for line in lines if not line.startswith(_MARK)),
                    done.stderr)
