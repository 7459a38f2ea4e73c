"""An empty library says so (issue 18 item 5) for `chat`, `eval` and the web app as `ask` and the API do
(tests/test_ask_cli.py): "the library is empty: run `paperchat ingest FILE`", a non-zero exit for the CLI, no
internal path. Real CLI subprocesses and a real app over a real (empty) store."""

from __future__ import annotations

import html
import json
import os
import subprocess
from pathlib import Path

from conftest import ROOT, paperchat_cmd

EMPTY = "the library is empty: run `paperchat ingest FILE`"


def run(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(paperchat_cmd(*args), input=stdin, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PAPERCHAT_HOME": str(home)}, timeout=300)


def assert_says_empty(out: subprocess.CompletedProcess[str]) -> None:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert EMPTY in out.stderr, out.stderr
    for internal in ("catalog", "sqlite", "Traceback", "chroma"):
        assert internal not in out.stderr.lower(), out.stderr


def test_chat_on_an_empty_library_says_how_to_fill_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = run(home, "chat", stdin="What does EPPO penalize?\n\n")
    assert_says_empty(out)
    assert "paperchat ingest --sample" in out.stderr and "papers," not in out.stdout
    assert json.loads(run(home, "stats", "--json").stdout)["papers"] == 0  # nothing was ingested behind the back


def test_eval_on_an_empty_library_says_how_to_fill_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = run(home, "eval", "--current-store", "--limit", "1", "--mode", "extractive", "--out",
              str(tmp_path / "report"))
    assert_says_empty(out)
    assert "--corpus" in out.stderr and not (tmp_path / "report").exists()
    own = tmp_path / "mine.jsonl"  # a set of one's own without a .corpus file runs on the library
    own.write_text('{"id": "q1", "type": "out-of-corpus", "question": "What does EPPO penalize?", "gold": [], '
                   '"answerable": false}\n')
    assert_says_empty(run(home, "eval", str(own), "--mode", "extractive", "--out", str(tmp_path / "r2")))


def test_eval_on_a_corpus_that_gives_no_paper_names_the_corpus_not_the_library(tmp_path: Path) -> None:
    bad = tmp_path / "nothing.bib"
    bad.write_text("@article{a,\n  title = {No abstract here},\n}\n")
    out = run(tmp_path / "home", "eval", "--corpus", str(bad), "--limit", "1", "--mode", "extractive",
              "--out", str(tmp_path / "report"))
    assert out.returncode == 2 and "the eval corpus gave no paper to evaluate on" in out.stderr, out.stderr
    assert EMPTY not in out.stderr and "Traceback" not in out.stderr


def test_the_app_on_an_empty_library_opens_and_answers_with_the_message(make_runtime, tmp_path: Path) -> None:
    from ui.app import build_app
    from ui.tabs.session import Session

    rt = make_runtime(home=tmp_path / "empty")
    app = build_app(rt)  # an empty store has no question-filter catalog: the app must open all the same
    header = next(b for b in app.blocks.values() if getattr(b, "elem_id", None) == "pc-header")
    assert EMPTY in header.value and "Library" in header.value
    ask = next(f.fn for f in app.fns.values() if f.name == "ask")
    shown = list(ask("What does EPPO penalize?", [], Session(), 5, "extractive", None, None, None, None))
    reply = html.unescape(shown[-1][0][-1]["content"]).replace("\\", "")
    assert "pc-error" in reply and EMPTY in reply, reply
    assert "catalog" not in reply and "sqlite" not in reply and "went wrong" not in reply


def test_serve_fills_an_empty_library_with_the_bundled_sample_once(make_runtime, tmp_path: Path) -> None:
    from ui.services import ensure_sample

    rt = make_runtime(home=tmp_path / "first-run")
    assert ensure_sample(rt, tmp_path / "no-such-folder") is None and rt.store.count_chunks() == 0
    report = ensure_sample(rt)  # the bundled sample, as `paperchat serve` finds it
    assert report is not None and report.added == 40 and not report.file_errors, report.summary()
    assert ensure_sample(rt) is None  # a library that holds papers is left as it is
