"""Concurrent chat sessions against a real `paperchat serve` over loopback (extractive mode), run as the load
benchmark runs them (``python -m bench.load``) and checked through its results file.

The small run always runs; ``pytest --long`` runs the issue's 20 sessions × 60 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.data import ROOT
from tests.support.scripts import run_module
from tests.support.servers import PaperchatServer


def _load(tmp_path: Path, sessions: int, seconds: int) -> dict:
    out = tmp_path / "load.json"
    proc = run_module("bench.load", "--sessions", str(sessions), "--seconds", str(seconds), "--out", str(out),
                      timeout=1700)
    assert out.exists(), proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert proc.returncode == (0 if res["errors"] == 0 else 1), proc.stderr[-3000:]
    return res


def _check(res: dict) -> None:
    assert res["errors"] == 0, res["error_examples"]
    assert res["server_log_tracebacks"] == 0
    out = res["outcomes"]
    assert out.get("cited", 0) >= 1, out
    assert out.get("uncited", 0) == 0, [r for r in res["records"] if r["outcome"] == "uncited"][:3]
    # every answer to an in-corpus question carries citations; out-of-corpus ones get the fixed reply
    for r in res["records"]:
        if r["outcome"] == "cited":
            assert r["latency_s"] > 0
    assert res["latency_s"]["p50"] is not None and res["latency_s"]["p95"] >= res["latency_s"]["p50"]


@pytest.mark.timeout(900)  # ~40 s on an idle machine: model load, ingest of 40 papers, server start, 10 s of load
def test_three_sessions_for_ten_seconds(tmp_path: Path) -> None:
    res = _load(tmp_path, sessions=3, seconds=10)
    _check(res)
    assert res["questions"] >= 3
    assert {r["session"] for r in res["records"]} == {0, 1, 2}
    assert res["command"].startswith("python -m bench.load --sessions 3")


@pytest.mark.timeout(900)
def test_the_server_is_stopped_even_when_what_runs_inside_fails(tmp_path: Path) -> None:
    server = PaperchatServer(tmp_path / "home", sorted((ROOT / "data" / "sample").glob("*.txt"))[:2])
    with pytest.raises(RuntimeError, match="the load driver crashed"), server:
        assert server.proc is not None and server.proc.poll() is None  # serving
        raise RuntimeError("the load driver crashed")
    assert server.proc is not None and server.proc.poll() is not None


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_twenty_sessions_for_sixty_seconds(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("--long", default=False):
        pytest.skip("long variant: pytest --long (plugin tests.plugins.long), or python -m bench.load")
    _check(_load(tmp_path, sessions=20, seconds=60))
