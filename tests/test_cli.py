"""The `paperchat` CLI end to end, in subprocesses, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import ROOT, SAMPLE, paperchat_cmd


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(paperchat_cmd(*args), capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_ingest_twice_then_stats_and_papers(paperchat_home: Path) -> None:
    first = run("ingest", *map(str, SAMPLE))
    assert first.returncode == 0, first.stderr
    assert "added 40," in first.stdout
    second = run("ingest", "--json", *map(str, SAMPLE))
    report = json.loads(second.stdout)
    assert (report["added"], report["unchanged"], report["embedded_chunks"]) == (0, 40, 0)
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["papers"] == 40 and isinstance(stats["chunks"], int) and stats["chunks"] >= 40
    assert stats["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2" and stats["dim"] == 384
    kolter = json.loads(run("papers", "--author", "zico kolter", "--json").stdout)
    assert len(kolter) == 1 and kolter[0]["label"]
    rl = json.loads(run("papers", "--category", "Reinforcement Learning", "--json").stdout)
    assert len(rl) >= 5 and all("Reinforcement Learning" in r["categories"] for r in rl)


def test_stats_on_an_empty_home_loads_no_model(paperchat_home: Path) -> None:
    out = run("stats", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["papers"] == 0


def test_bad_paths_get_one_clear_line(paperchat_home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("   \n")
    out = run("ingest", str(tmp_path / "missing.bib"), str(empty))
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "missing.bib" in out.stderr and "empty.txt" in out.stderr
    bad_map = run("ingest", "--map", "abstract", str(SAMPLE[0]))
    assert bad_map.returncode == 2 and "FIELD=COLUMN" in bad_map.stderr


def test_chat_repl_ingests_the_sample_and_answers_a_follow_up(paperchat_home: Path) -> None:
    out = subprocess.run(paperchat_cmd("chat"), input="What is the energy loss phenomenon in RLHF?\n"
                         "What does it penalize?\n\n", capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "added 40" in out.stdout and "40 papers" in out.stdout
    answers = out.stdout.split("> ")[1:]
    assert len(answers) >= 2
    assert "[1]" in answers[0] and "EPPO" in answers[1]
