"""Local servers for the benchmarks and the tests: a free port on 127.0.0.1, and a real ``chroma run``.

    with ChromaServer(tmp / "chroma") as chroma:      # a free port, ready once its heartbeat answers
        settings = get_settings(store={"mode": "server", "port": chroma.port})
        ...
        chroma.stop(); chroma.start()                 # the same path and port again (a server that comes back)

The server runs in its own process group, so stopping it (SIGTERM, then SIGKILL if it lingers) also stops
anything it started, and ``stop`` returns only once the port is closed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
# Loopback only: a developer's http_proxy must not see (or break) the heartbeat.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def chroma_exe() -> str:
    """The ``chroma`` CLI next to this interpreter (it comes with chromadb), else the one on PATH."""
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if not exe:
        raise RuntimeError("the chroma CLI is not installed (it comes with chromadb)")
    return exe


class ChromaServer:
    """``chroma run --path PATH`` on 127.0.0.1; started by ``start()`` or ``with``, always stopped on exit."""

    def __init__(self, path: Path, port: int | None = None, log_path: Path | None = None,
                 ready_timeout_s: float = 120.0) -> None:
        self.path = path
        self.port = port or free_port()
        self.log_path = log_path or path.parent / "chroma-server.log"
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def heartbeat(self) -> bool:
        """True when the server answers its heartbeat (the port alone opens before it can serve)."""
        try:
            with _DIRECT.open(f"{self.url}/api/v2/heartbeat", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def start(self) -> ChromaServer:
        """Start the server and return once its heartbeat answers; raise with the log's tail if it does not."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:  # appended: a restarted server keeps the earlier log
            # env(1) adds the one variable without this process reading its own environment.
            self.proc = subprocess.Popen(
                ["/usr/bin/env", "ANONYMIZED_TELEMETRY=False", chroma_exe(), "run", "--path", str(self.path),
                 "--host", HOST, "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + self.ready_timeout_s
        while not self.heartbeat():
            if self.proc.poll() is not None:
                self.proc = None
                raise RuntimeError(f"chroma run exited: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"chroma run did not answer within {self.ready_timeout_s:.0f} s: "
                                   f"{self.log_tail()}")
            time.sleep(0.2)
        return self

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop the server and everything it started; return once its port is closed."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout_s)
        except ProcessLookupError:  # already gone
            proc.wait(timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        while _port_open(self.port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the chroma server's port {self.port} is still open after it stopped")
            time.sleep(0.1)

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
