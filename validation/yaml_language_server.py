"""What an editor shows: open suites in yaml-language-server with the suite schema mapped to
``*.t2i.yaml`` (as VS Code's ``yaml.schemas`` does) and print its diagnostics per file.

yaml-language-server is the engine of VS Code's YAML extension, Neovim's yamlls and others;
it validates with draft-07 semantics, which the schema is written for
(``pytest_t2ibias/suite/schema.py``). It is a Node program, not a dependency of this project:

    npm install --prefix /tmp/yls yaml-language-server
    python validation/yaml_language_server.py --server /tmp/yls/node_modules/.bin/yaml-language-server \\
        example_suites/*.t2i.yaml example_suites/paper/*.t2i.yaml

A file whose first line is a ``# yaml-language-server: $schema=...`` modeline uses that schema
instead. Exit status: the number of files with a diagnostic (capped at 100).
"""

from __future__ import annotations

import argparse
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "pytest_t2ibias" / "data" / "t2i-suite.schema.json"


class Server:
    """A language server over stdio: JSON-RPC messages with Content-Length headers."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = stream.read(1)
                if not byte:
                    return
                header += byte
            fields = dict(line.split(": ", 1) for line in header.decode().strip().split("\r\n"))
            self.inbox.put(json.loads(stream.read(int(fields["Content-Length"]))))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def diagnostics(server_command: list[str], schema: Path, files: list[Path],
                settle: float = 3.0, timeout: float = 60.0) -> dict[Path, list[dict[str, Any]]]:
    """Each file's last published diagnostics."""
    settings = {"validate": True, "schemaStore": {"enable": False},
                "schemas": {schema.resolve().as_uri(): "*.t2i.yaml"}}
    server = Server(server_command)
    try:
        server.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": Path.cwd().as_uri(),
            "capabilities": {"workspace": {"configuration": True}}}})
        server.send({"method": "initialized", "params": {}})
        server.send({"method": "workspace/didChangeConfiguration",
                     "params": {"settings": {"yaml": settings}}})
        by_uri = {path.resolve().as_uri(): path for path in files}
        for uri, path in by_uri.items():
            server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "yaml", "version": 1,
                "text": path.read_text(encoding="utf-8")}}})
        found: dict[Path, list[dict[str, Any]]] = {}
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            if len(found) == len(by_uri) and time.monotonic() - quiet_since > settle:
                break
            try:
                message = server.inbox.get(timeout=0.2)
            except queue.Empty:
                continue
            quiet_since = time.monotonic()
            if message.get("method") == "workspace/configuration":
                server.send({"id": message["id"],
                             "result": [settings for _ in message["params"]["items"]]})
            elif message.get("method") == "textDocument/publishDiagnostics":
                uri = message["params"]["uri"]
                if uri in by_uri:
                    found[by_uri[uri]] = message["params"]["diagnostics"]
        return found
    finally:
        server.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True,
                        help="the yaml-language-server executable (node_modules/.bin/...)")
    parser.add_argument("--schema", type=Path, default=SCHEMA)
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    found = diagnostics([args.server, "--stdio"], args.schema, args.files)
    flagged = 0
    for path in args.files:
        problems = found.get(path)
        if problems is None:
            print(f"{path}: no answer from the server")
            flagged += 1
            continue
        print(f"{path}: {len(problems)} problem(s)")
        for problem in problems:
            print(f"  line {problem['range']['start']['line'] + 1}: {problem['message']}")
        flagged += bool(problems)
    return min(flagged, 100)


if __name__ == "__main__":
    sys.exit(main())
