"""Waiting for a server a test started as a child process: only the connection is retried, never the test.

    proc = subprocess.Popen([...,"--port", str(port)], ...)
    wait_for_port(port, proc)          # returns once 127.0.0.1:port accepts a connection
    ...                                # the checks, run once: an assertion that fails is a failure

``wait_for_port`` raises ``RuntimeError`` at once when the process exits before its port opens (with the exit
code), and after ``timeout_s`` when it is still not listening.
"""

from __future__ import annotations

import socket
import subprocess
import time

HOST = "127.0.0.1"


def port_open(port: int, host: str = HOST) -> bool:
    """True when something accepts a TCP connection on ``host:port`` right now."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_for_port(port: int, proc: subprocess.Popen[str] | subprocess.Popen[bytes] | None = None,
                  timeout_s: float = 120.0, host: str = HOST) -> None:
    """Return once ``host:port`` accepts connections; ``RuntimeError`` if ``proc`` exits first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while not port_open(port, host):
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode} before {host}:{port} opened")
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on {host}:{port} after {timeout_s:.0f} s")
        time.sleep(0.2)
