"""The built wheel, installed into a fresh virtualenv outside the checkout, serves, answers and evals the
bundled sample: what a user who runs `pip install paperchat` gets, not what the checkout happens to hold.

The new virtualenv reuses this one's installed dependencies through a .pth line (nothing is downloaded);
paperchat itself comes only from the wheel, and each command runs from a directory outside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import ROOT

from tests.support.servers import free_port

QUESTION = "What is the energy loss phenomenon in RLHF?"


# Not copied to the build: setuptools keeps build/lib between builds and ships whatever it holds, so a
# module deleted from the tree would linger in a wheel built in place.
SKIP_TOP = {".git", ".venv", "build", "dist", "eval-reports", "reports", ".mypy_cache", ".ruff_cache", ".pytest_cache",
            ".hypothesis"}


def _skip(folder: str, names: list[str]) -> set[str]:
    top = Path(folder) == ROOT
    return {n for n in names if n == "__pycache__" or (top and (n in SKIP_TOP or n.endswith(".egg-info")))}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel .` of a clean copy of the checkout, offline (the build backend is in this virtualenv)."""
    src = tmp_path_factory.mktemp("source") / "paperchat"
    shutil.copytree(ROOT, src, ignore=_skip)
    out = tmp_path_factory.mktemp("wheelhouse")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (found,) = out.glob("paperchat-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel installed: its ``bin`` folder."""
    root = tmp_path_factory.mktemp("wheel-venv")
    assert not root.is_relative_to(ROOT)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    # Inside a repository of its own, as a project's .venv often is: reports must not take its commit for ours.
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=60)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "a project that holds its .venv"], check=True,
                   timeout=60)
    py = root / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    # A path line makes this virtualenv's packages importable; .pth files there (the editable install's
    # finder for the checkout) are not run, so paperchat can only come from the wheel.
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # --ignore-installed: pip sees this virtualenv's editable paperchat through the .pth line and must not
    # try to uninstall it.
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                              "--no-index", "--ignore-installed", str(wheel)], capture_output=True, text=True,
                             timeout=300)
    assert install.returncode == 0, install.stderr
    return root / "bin"


@pytest.fixture
def outside(tmp_path: Path, paperchat_home: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A working directory outside the checkout, and an environment with a fresh PAPERCHAT_HOME and nothing
    that could put the checkout on sys.path."""
    work = tmp_path / "work"
    work.mkdir()
    assert not work.is_relative_to(ROOT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PAPERCHAT_HOME"] = str(paperchat_home)
    yield work, env


def test_the_wheel_holds_every_module_and_the_files_the_commands_read(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sample = sorted(p.name for p in (ROOT / "data" / "sample").glob("*.txt"))
    assert sample and {f"rag/sample/{n}" for n in sample} <= names
    assert {"rag/sample/__init__.py", "evals/thresholds.toml", "evals/sets/seed.jsonl"} <= names
    # pyproject lists its packages by hand: a package added to the tree but not there would be left out.
    modules = {p.relative_to(ROOT).as_posix() for top in ("rag", "ui", "evals") for p in (ROOT / top).rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules - names == set()
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "paperchat = rag.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_installed_wheel_imports_from_its_own_virtualenv(venv: Path,
                                                             outside: tuple[Path, dict[str, str]]) -> None:
    work, env = outside
    code = ("import json, rag, ui, evals, evals.gate, evals.sets, rag.resources as r; print(json.dumps("
            "[rag.__file__, ui.__file__, evals.__file__, str(evals.gate.THRESHOLDS), str(evals.sets.SEED)]"
            " + [str(p) for p in r.sample_corpus()]))")
    out = subprocess.run([str(venv / "python"), "-c", code], cwd=work, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    paths = [Path(p) for p in json.loads(out.stdout)]
    assert len(paths) == 5 + len(list((ROOT / "data" / "sample").glob("*.txt")))
    for p in paths:
        assert p.is_file() and p.is_relative_to(venv.parent) and not p.is_relative_to(ROOT), p


@pytest.mark.timeout(900)
def test_the_installed_wheel_ingests_answers_serves_and_evals_the_sample(
        venv: Path, outside: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    work, env = outside
    paperchat = str(venv / "paperchat")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([paperchat, *args], cwd=work, env=env, capture_output=True, text=True, timeout=600)

    ingest = run("ingest", "--sample", "--json")
    assert ingest.returncode == 0, ingest.stderr
    assert json.loads(ingest.stdout)["added"] == 40

    ask = run("ask", "--json", QUESTION)
    assert ask.returncode == 0, ask.stderr
    answer = json.loads(ask.stdout)
    assert answer["answerable"] and "[1]" in answer["answer"]
    assert answer["citations"] and answer["citations"][0]["supported"]

    # serve and the eval run side by side: serve reads the home ingested above, eval its own throwaway store
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen([paperchat, "serve", "--host", "127.0.0.1", "--port", str(port)], cwd=work, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    evals = subprocess.Popen([paperchat, "eval", "--check", "--json", "--out", str(tmp_path / "report")], cwd=work,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        status, deadline = None, time.monotonic() + 240
        while status != 200 and server.poll() is None and time.monotonic() < deadline:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code
            except httpx.TransportError:
                time.sleep(1)
        log.flush()
        assert status == 200, (tmp_path / "serve.log").read_text()[-3000:]
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    try:
        stdout, stderr = evals.communicate(timeout=600)
    finally:
        if evals.poll() is None:
            evals.kill()
            evals.communicate()
    assert evals.returncode == 0, stderr[-3000:]
    report = json.loads(stdout)
    assert report["gate"] == {"passed": True, "failures": []}
    assert report["meta"]["cases"] == 66 and report["meta"]["set_name"] == "seed"
    corpus = report["meta"]["corpus"]
    assert corpus and all(Path(p).is_relative_to(venv.parent) for p in corpus)
    assert Path(report["meta"]["set"]).is_relative_to(venv.parent)
    assert report["meta"]["commit"] is None
