"""Run a script of the checkout (``python -m bench.x …``) in a child process, as a developer would: from the
repository root, with the checkout first on the import path. Tests check what such a script writes, never
import it."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.data import ROOT


def run_module(module: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` from the repository root; its exit code, stdout and stderr (not checked here)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
