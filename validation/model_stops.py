"""Where a generator's model id stops in ``backends/`` on its way from the option to loaded
weights (issue #34: "16 stops in 8 rooms, 8 of them returns to a room already visited").

A stop is a call of a function in ``pytest_t2ibias/backends/`` that is handed the raw id (a
string or path equal to it, not a resolved ``ModelSource``), so it may decide again whether
it is a path, read a config again or fingerprint again; a room is the module; a return is a
stop in a module the id had already left.

    python validation/model_stops.py [MODEL]     # default fixtures/toy-sd, run from a checkout

Traces the built-in provider making the candidate's generator, its cache key (the
fingerprint) and loading the pipeline, as a cold run does. Prints each stop, then the
totals."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else "fixtures/toy-sd"
    import pytest_t2ibias
    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.backends._providers import BuiltinBackends

    backends = str(Path(pytest_t2ibias.__file__).parent / "backends")
    raw = {model, os.path.abspath(model), str(Path(model).expanduser())}
    stops: list[tuple[str, str]] = []

    def is_raw(value: object) -> bool:
        return (isinstance(value, str) and value in raw) or (
            isinstance(value, Path) and str(value) in raw)

    def profile(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(backends):
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if any(is_raw(frame.f_locals.get(name)) for name in names):
            stops.append((Path(code.co_filename).stem, code.co_qualname))

    settings = Settings.standalone(model=model, no_cache=True)
    sys.setprofile(profile)
    try:
        generator = BuiltinBackends(settings).generator(model, "candidate")
        generator.fingerprint  # noqa: B018 - the cache key, as every request reads it
        generator.loaded()
    finally:
        sys.setprofile(None)
    rooms: list[str] = []
    returns = 0
    for room, function in stops:
        if rooms and rooms[-1] != room and room in rooms:
            returns += 1
        if not rooms or rooms[-1] != room:
            rooms.append(room)
        print(f"  {room}.{function}")
    print(f"{len(stops)} stops in {len(set(rooms))} rooms of backends/, {returns} of them "
          f"returns to a room already visited")


if __name__ == "__main__":
    main()
