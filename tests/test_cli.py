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


def test_chat_repl_answers_a_follow_up(paperchat_home: Path) -> None:
    assert "added 40" in run("ingest", "--sample").stdout  # as `make chat` does (an empty library: test_empty_library)
    out = subprocess.run(paperchat_cmd("chat"), input="What is the energy loss phenomenon in RLHF?\n"
                         "What does it penalize?\n\n", capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "40 papers" in out.stdout
    answers = out.stdout.split("> ")[1:]
    assert len(answers) >= 2
    assert "[1]" in answers[0] and "EPPO" in answers[1]


def _library(path: Path, entries: int = 700, without_abstract: int = 240) -> list[int]:
    """A BibTeX library of ``entries`` short papers, ``without_abstract`` of them (spread through the file)
    lacking an abstract; returns the line of each entry without one."""
    lines: list[str] = []
    missing: list[int] = []
    for i in range(entries):
        lacks = len(missing) < without_abstract * (i + 1) // entries
        if lacks:
            missing.append(len(lines) + 1)
        lines += [f"@article{{key{i},", f"  title = {{Paper number {i} on topic {i % 17}}},",
                  f"  author = {{Author{i}, Ann and Writer, Bo}},", f"  year = {{{2000 + i % 20}}},"]
        if not lacks:
            lines.append(f"  abstract = {{We study problem {i} and show result {i * 7} holds for case {i % 11}.}},")
        lines += ["}", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return missing


def test_a_library_with_hundreds_of_entries_lacking_an_abstract_gets_one_summary_line(
        paperchat_home: Path, tmp_path: Path) -> None:
    bib = tmp_path / "refs.bib"
    missing = _library(bib)
    assert len(missing) == 240
    first = run("ingest", str(bib))
    assert first.returncode == 0, first.stderr
    assert "added 460," in first.stdout and "skipped 240," in first.stdout
    noisy = [ln for ln in first.stderr.splitlines() if "refs.bib" in ln or "abstract" in ln]
    assert 1 <= len(noisy) <= 5, first.stderr
    line = next(ln for ln in noisy if ln.startswith("skipped 240 records: no abstract"))
    assert f"refs.bib:{missing[0]}" in line and f"refs.bib:{missing[1]}" in line
    report_file = Path(line.rsplit("full list: ", 1)[1].rstrip(")"))
    assert report_file.parent == paperchat_home / "reports"
    listed = [ln for ln in report_file.read_text(encoding="utf-8").splitlines() if not ln.startswith("#") and ln]
    assert [int(ln.split(":")[1]) for ln in listed] == missing
    assert all(ln.startswith(f"{bib}:") and "no abstract in entry 'key" in ln for ln in listed)

    given = tmp_path / "skipped.txt"
    again = run("ingest", "--json", "--report", str(given), str(bib))  # no-op re-ingest
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert (summary["added"], summary["unchanged"], summary["skipped"]) == (0, 460, 240)
    assert summary["skipped_by_reason"] == {"no abstract": 240} and summary["report"] == str(given)
    assert len(given.read_text(encoding="utf-8").splitlines()) >= 240
    assert len([ln for ln in again.stderr.splitlines() if "refs.bib" in ln]) == 1, again.stderr
    verbose = run("-v", "ingest", str(bib))
    assert len([ln for ln in verbose.stderr.splitlines() if "no abstract in entry" in ln]) >= 240


def test_year_ranges_of_the_cli_and_the_api() -> None:
    import pytest

    from rag.errors import InputError
    from rag.index.paper_query import parse_year_range

    assert parse_year_range("2024") == (2024, 2024) and parse_year_range(" 2020-2024 ") == (2020, 2024)
    assert parse_year_range("2020-") == (2020, None) and parse_year_range("-2024") == (None, 2024)
    assert parse_year_range(None) == parse_year_range("") == (None, None)
    with pytest.raises(InputError, match=r"year expects YEAR or FROM-TO, got '20x4'"):
        parse_year_range("20x4", "year")
