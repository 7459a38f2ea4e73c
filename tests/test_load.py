"""Concurrent chat sessions against a real `paperchat serve` over loopback (extractive mode).

The small run always runs; ``pytest --long`` runs the issue's 20 sessions × 60 s, which is also
``python -m bench.load``."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import load


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
    res = load.run_load(sessions=3, seconds=10, seed=0, workdir=tmp_path)
    _check(res)
    assert res["questions"] >= 3
    assert {r["session"] for r in res["records"]} == {0, 1, 2}


def test_server_is_stopped_even_when_the_load_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[load.Server] = []
    real_enter = load.Server.__enter__

    def enter(self: load.Server) -> load.Server:
        started.append(self)
        return real_enter(self)

    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("the load driver crashed")

    monkeypatch.setattr(load.Server, "__enter__", enter)
    monkeypatch.setattr(load, "drive", boom)
    with pytest.raises(RuntimeError, match="driver crashed"):
        load.run_load(sessions=1, seconds=1, workdir=tmp_path)
    assert started and started[0].proc is not None and started[0].proc.poll() is not None


def test_reply_classification() -> None:
    assert load.classify('<span class="pc-error">&#9888; too many questions</span>') == "error"
    assert load.classify('<span class="pc-meta"></span>') == "empty"
    assert load.classify("I can&#x27;t answer that from the papers in this collection.") == "cannot-answer"
    assert load.classify('X <a class="pc-cite" href="#pc-card-0-1">&#91;1&#93;</a>') == "cited"
    assert load.classify("text without citations") == "uncited"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_twenty_sessions_for_sixty_seconds(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("--long", default=False):
        pytest.skip("long variant: pytest --long (plugin tests.plugins.long), or python -m bench.load")
    res = load.run_load(sessions=20, seconds=60, seed=0, workdir=tmp_path)
    _check(res)
