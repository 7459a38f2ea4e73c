"""Local servers for the tests and the benchmarks: a free port on 127.0.0.1, a real ``chroma run``, and a real
``paperchat serve`` over an ingested corpus (``PaperchatServer``).

    with ChromaServer(tmp / "chroma") as chroma:      # a free port, ready once its heartbeat answers
        settings = get_settings(store={"mode": "server", "port": chroma.port})
        ...
        chroma.stop(); chroma.start()                 # the same path and port again (a server that comes back)

    with ChromaServer(tmp / "chroma", token="s3cret") as chroma:   # only requests with the token get through
        settings = get_settings(store={"mode": "server", "port": chroma.port, "token": "s3cret"})

The server runs in its own process group, so stopping it (SIGTERM, then SIGKILL if it lingers) also stops
anything it started, and ``stop`` returns only once the port is closed.

With a ``token``, ``chroma run`` listens on a second, private port and a ``TokenGate`` holds the public
one. Chroma 1.x's server (the Rust ``chroma run``) has no authentication of its own: its ``run`` command
hands the frontend the no-op authenticator, and neither its config file nor the old
``CHROMA_SERVER_AUTHN_*`` variables change that (docs/deployment.md). A gate in front (nginx, Envoy, Caddy)
is how such a server gets token authentication, and ``TokenGate`` is the smallest one: it answers a refused
request the way Chroma's own token authentication did.
"""

from __future__ import annotations

import hmac
import http.client
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from tests.support.processes import port_open

log = logging.getLogger(__name__)
HOST = "127.0.0.1"
# Loopback only: a developer's http_proxy must not see (or break) the heartbeat.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def chroma_exe() -> str:
    """The ``chroma`` CLI next to this interpreter (it comes with chromadb), else the one on PATH."""
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if not exe:
        raise RuntimeError("the chroma CLI is not installed (it comes with chromadb)")
    return exe


# Open without a token, as they were under Chroma's token authentication (and needed by load balancers).
_OPEN_PATHS = frozenset({"/api/v2/heartbeat", "/api/v2/version", "/api/v2/healthcheck"})
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
                         "transfer-encoding", "upgrade", "host", "content-length"})
REFUSED_BODY = b'{"error":"AuthError","message":"Forbidden"}'  # Chroma's answer to a missing or wrong token


class _GateHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as chromadb's httpx client expects
    server: _GateServer

    def setup(self) -> None:
        super().setup()
        self.server.gate._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.gate._track(self.connection, False)

    def _forward(self) -> None:
        gate = self.server.gate
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if urlsplit(self.path).path not in _OPEN_PATHS and not gate.admits(self.headers):
            gate._count(admitted=False)
            self._reply(403, REFUSED_BODY, [("Content-Type", "application/json")])
            return
        gate._count(admitted=True)
        upstream = http.client.HTTPConnection(HOST, gate.upstream_port, timeout=120)
        try:
            upstream.request(self.command, self.path, body=body or None,
                             headers={k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP})
            r = upstream.getresponse()
            status, data = r.status, r.read()
            headers = [(k, v) for k, v in r.getheaders() if k.lower() not in _HOP_BY_HOP]
        except OSError:
            status, data, headers = 502, b'{"error":"BadGateway","message":"chroma is not answering"}', []
        finally:
            upstream.close()
        self._reply(status, data, headers)

    def _reply(self, status: int, data: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server API
        pass


class _GateServer(ThreadingHTTPServer):
    daemon_threads = True
    gate: TokenGate

    def handle_error(self, request: Any, client_address: Any) -> None:  # noqa: ARG002 - socketserver API
        pass  # a client that hung up, or a connection closed by stop(): nothing to report


class TokenGate:
    """A reverse proxy on 127.0.0.1 in front of a Chroma server that lets a request through only with the token.

    ``header="Authorization"`` wants ``Authorization: Bearer <token>``, ``"X-Chroma-Token"`` wants
    ``X-Chroma-Token: <token>`` (Chroma's two token transports). Heartbeat and version stay open; any other
    request without the token gets Chroma's 403 ``{"error": "AuthError", "message": "Forbidden"}``. ``token``
    may be changed while it runs (a token rotated on the server); ``admitted`` and ``refused`` count requests.
    """

    def __init__(self, upstream_port: int, token: str, header: Literal["Authorization", "X-Chroma-Token"]
                 = "Authorization", port: int | None = None) -> None:
        self.upstream_port, self.token, self.header = upstream_port, token, header
        self.port = port or free_port()
        self.admitted = self.refused = 0
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._httpd: _GateServer | None = None
        self._thread: threading.Thread | None = None

    def admits(self, headers: Any) -> bool:
        got = headers.get(self.header)
        if got is None:
            return False
        if self.header == "Authorization":
            if not got.startswith("Bearer "):
                return False
            got = got[len("Bearer "):]
        return hmac.compare_digest(got.strip().encode(), self.token.encode())

    def _count(self, admitted: bool) -> None:
        with self._lock:
            if admitted:
                self.admitted += 1
            else:
                self.refused += 1

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._open.add if add else self._open.discard)(conn)

    def start(self) -> TokenGate:
        httpd = _GateServer((HOST, self.port), _GateHandler)
        httpd.gate = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name=f"token-gate-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the port and every open connection (a kept-alive client must not reach the server after)."""
        if self._httpd is None:
            return
        httpd, self._httpd = self._httpd, None
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns, self._open = list(self._open), set()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> TokenGate:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class ChromaServer:
    """``chroma run --path PATH`` on 127.0.0.1; started by ``start()`` or ``with``, always stopped on exit.

    With ``token``, a ``TokenGate`` on ``port`` admits only requests that carry it (``token_header``) and
    ``chroma run`` itself listens on ``chroma_port``, which nothing but the gate should use."""

    def __init__(self, path: Path, port: int | None = None, log_path: Path | None = None,
                 ready_timeout_s: float = 120.0, token: str | None = None,
                 token_header: Literal["Authorization", "X-Chroma-Token"] = "Authorization") -> None:
        self.path = path
        self.port = port or free_port()
        self.chroma_port = free_port() if token else self.port
        self.token, self.token_header = token, token_header
        self.gate: TokenGate | None = None
        self.log_path = log_path or path.parent / "chroma-server.log"
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def heartbeat(self, port: int | None = None) -> bool:
        """True when the server answers its heartbeat (the port alone opens before it can serve)."""
        try:
            with _DIRECT.open(f"http://{HOST}:{port or self.port}/api/v2/heartbeat", timeout=2) as r:
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
                 "--host", HOST, "--port", str(self.chroma_port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + self.ready_timeout_s
        while not self.heartbeat(self.chroma_port):
            if self.proc.poll() is not None:
                self.proc = None
                raise RuntimeError(f"chroma run exited: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"chroma run did not answer within {self.ready_timeout_s:.0f} s: "
                                   f"{self.log_tail()}")
            time.sleep(0.2)
        if self.token is not None:
            self.gate = TokenGate(self.chroma_port, self.token, self.token_header, port=self.port).start()
        return self

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop the server and everything it started; return once its port is closed."""
        if self.gate is not None:
            self.gate.stop()
            self.gate = None
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
        while port_open(self.chroma_port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the chroma server's port {self.chroma_port} is still open after it stopped")
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


def server_env(home: Path, rpm: int | None) -> dict[str, str]:
    """This process's environment without its PAPERCHAT_* settings (extractive mode), for a server in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCHAT_")}  # extractive: no LLM url
    env.update({"PAPERCHAT_HOME": str(home), "ANONYMIZED_TELEMETRY": "False", "GRADIO_ANALYTICS_ENABLED": "False"})
    if rpm:
        env["PAPERCHAT_LIMITS__REQUESTS_PER_MINUTE"] = str(rpm)
    return env


class PaperchatServer:
    """``paperchat ingest`` of ``corpus`` into ``home``, then ``paperchat serve`` on a free port, as a subprocess in its
    own process group; stopped (SIGTERM, then SIGKILL) on exit, whatever happened inside the ``with``."""

    def __init__(self, home: Path, corpus: list[Path], rpm: int | None = None, ready_timeout: float = 600.0) -> None:
        self.home, self.corpus, self.port = home, corpus, free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.env = server_env(home, rpm)
        self.log_path = home / "serve.log"
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PaperchatServer:
        self.home.mkdir(parents=True, exist_ok=True)
        ingest = subprocess.run([sys.executable, "-m", "rag.cli", "ingest", *map(str, self.corpus)], cwd=self.home,
                                env=self.env, capture_output=True, text=True, timeout=900)
        if ingest.returncode != 0:
            raise RuntimeError(f"ingest of the corpus failed: {ingest.stderr[-1000:]}")
        log.info("corpus: %s", ingest.stdout.strip())
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "rag.cli", "serve", "--port", str(self.port)],
                                     cwd=self.home, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"paperchat serve exited {self.proc.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"paperchat serve not ready after {self.ready_timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        if getattr(self, "_log", None):
            self._log.close()

    def __exit__(self, *exc: object) -> None:
        self.stop()
