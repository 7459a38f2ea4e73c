"""Issue 18 "Done when": a 700-entry BibTeX library with 240 entries lacking abstracts, some abstracts over the
length limit and some fields given twice ingests with a handful of summary lines on stderr (also when
re-ingested), the same figures in ``--json``, every record in the ``--report`` file, and one line per record
only with ``-v``. The real CLI in a subprocess, with the real embedder and Chroma."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from conftest import ROOT, paperchat_cmd

ENTRIES, WITHOUT_ABSTRACT, TOO_LONG, TWICE = 700, 240, 12, 8
LIMIT = 1000  # PAPERCHAT_LIMITS__ABSTRACT_CHARS for these runs (the smallest allowed)
CUT = "abstract cut to the 1000-character limit, PAPERCHAT_LIMITS__ABSTRACT_CHARS"
GIVEN_TWICE = "a field given twice in the entry, the first value used"


def write_library(path: Path) -> dict[str, list[int]]:
    """The library; returns the line of each entry by what is special about it."""
    lines: list[str] = []
    where: dict[str, list[int]] = {"missing": [], "long": [], "twice": []}
    for i in range(ENTRIES):
        start = len(lines) + 1
        lacks = len(where["missing"]) < WITHOUT_ABSTRACT * (i + 1) // ENTRIES
        long = not lacks and i % 25 == 7 and len(where["long"]) < TOO_LONG
        twice = not lacks and not long and i % 25 == 21 and len(where["twice"]) < TWICE
        lines += [f"@article{{key{i},", f"  title = {{Paper number {i} on topic {i % 17}}},",
                  f"  author = {{Author{i}, Ann and Writer, Bo}},", f"  year = {{{2000 + i % 20}}},"]
        if twice:
            lines.append(f"  title = {{A second title for paper {i}}},")
        if long:
            body = " ".join(f"Sentence {j} of paper {i} reports finding {j * i} in setting {j}." for j in range(40))
            assert len(body) > 1.5 * LIMIT
            lines.append(f"  abstract = {{{body}}},")
        elif not lacks:
            lines.append(f"  abstract = {{We study problem {i} and show result {i * 7} holds for case {i % 11}.}},")
        lines += ["}", ""]
        for kind, flag in (("missing", lacks), ("long", long), ("twice", twice)):
            if flag:
                where[kind].append(start)
    path.write_text("\n".join(lines), encoding="utf-8")
    assert [len(where[k]) for k in ("missing", "long", "twice")] == [WITHOUT_ABSTRACT, TOO_LONG, TWICE]
    return where


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PAPERCHAT_HOME": str(home), "PAPERCHAT_LIMITS__ABSTRACT_CHARS": str(LIMIT)}
    out = subprocess.run(paperchat_cmd(*args), capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return out


def stderr_lines(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in out.stderr.splitlines() if ln.strip()]


def test_a_700_entry_library_prints_a_handful_of_summary_lines_and_the_same_figures_in_json(tmp_path: Path) -> None:
    bib = tmp_path / "refs.bib"
    where = write_library(bib)
    home, report = tmp_path / "home", tmp_path / "report.txt"

    first = run(home, "ingest", "--json", "--report", str(report), str(bib))
    got = json.loads(first.stdout)
    assert (got["added"], got["skipped"], got["failed"]) == (ENTRIES - WITHOUT_ABSTRACT, WITHOUT_ABSTRACT, 0)
    assert got["skipped_by_reason"] == {"no abstract": WITHOUT_ABSTRACT}
    assert got["noted"] == TOO_LONG + TWICE
    assert got["noted_by_reason"] == {CUT: TOO_LONG, GIVEN_TWICE: TWICE}
    assert got["report"] == str(report)

    lines = stderr_lines(first)
    assert len(lines) <= 5, first.stderr
    # the stderr figures are the JSON's, each with its first file:line examples
    skipped = next(ln for ln in lines if ln.startswith(f"skipped {WITHOUT_ABSTRACT} records: no abstract ("))
    assert f"refs.bib:{where['missing'][0]}, refs.bib:{where['missing'][1]}" in skipped
    cut = next(ln for ln in lines if ln.startswith(f"noted {TOO_LONG} records: {CUT} ("))
    assert f"refs.bib:{where['long'][0]}" in cut and f"full list: {report}" in cut
    twice = next(ln for ln in lines if ln.startswith(f"noted {TWICE} records: {GIVEN_TWICE} ("))
    assert f"refs.bib:{where['twice'][0]}" in twice

    # the report file lists every record, with the detail the summary leaves out
    listed = report.read_text(encoding="utf-8").splitlines()
    assert f"# {WITHOUT_ABSTRACT} skipped: no abstract" in listed
    assert f"# {TOO_LONG} noted: {CUT}" in listed and f"# {TWICE} noted: {GIVEN_TWICE}" in listed
    records = [ln for ln in listed if re.match(r".*refs\.bib:\d+: ", ln)]
    assert len(records) == WITHOUT_ABSTRACT + TOO_LONG + TWICE
    assert any(f"refs.bib:{where['long'][0]}: {CUT} (" in ln and "characters, now" in ln for ln in records)
    assert any(f"refs.bib:{where['twice'][0]}: {GIVEN_TWICE} (title in 'key" in ln for ln in records)

    # the abstracts were cut, at a sentence end, and stored
    papers = json.loads(run(home, "papers", "--search", "Sentence 3 of paper", "--json").stdout)
    assert len(papers) == TOO_LONG
    assert all(len(p["abstract"]) <= LIMIT and re.search(r"in setting \d+\. …$", p["abstract"]) for p in papers)

    # a no-op re-ingest, without --json: the same handful of lines, not one warning per record
    again = run(home, "ingest", str(bib))
    assert f"unchanged {ENTRIES - WITHOUT_ABSTRACT}," in again.stdout
    lines = stderr_lines(again)
    assert len(lines) <= 5, again.stderr
    assert sum(ln.startswith(("skipped ", "noted ")) for ln in lines) == 3

    # -v names every record, one line each
    verbose = run(home, "-v", "ingest", str(bib))
    named = [ln for ln in verbose.stderr.splitlines() if re.search(r"refs\.bib:\d+: ", ln)]
    assert len(named) >= WITHOUT_ABSTRACT + TOO_LONG + TWICE
