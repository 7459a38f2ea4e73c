"""Collections: named sets of papers made from an ingest, a search or a source's own collections; questions
asked within one cite only its papers; membership survives re-ingest, ``--rebuild``, a kill mid-ingest and
works against a `chroma run` server; bad names and unknown collections are refused with nothing changed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE, paperchat_cmd

from rag.errors import InputError
from rag.index.collections import Collections, check_name
from rag.index.paper_query import PaperQuery, find_papers
from rag.records import Paper


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(paperchat_cmd(*args), cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=env or dict(os.environ))


@pytest.fixture
def sample_rt(make_runtime):
    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE)
    return rt


def _ids(rt, **query) -> list[str]:
    return [p.id for p in find_papers(rt.store, PaperQuery(**query), limit=10_000)]


def test_a_question_within_a_collection_cites_only_its_papers(sample_rt) -> None:
    from rag.qa.chain import AnswerChain

    rt = sample_rt
    members = _ids(rt, text="reinforcement")
    assert 3 <= len(members) < len(rt.store.paper_ids())
    assert rt.collections().add("RL reading", members) == len(members)
    chain = AnswerChain(rt)
    questions = ["How do agents explore efficiently?", "What is proposed for image generation?",
                 "Which methods learn from human feedback?"]
    for q in questions:
        answer = chain.ask(q, filters=PaperQuery(collection="RL reading"))
        assert answer.filters == {"collection": "RL reading"}
        assert {c.paper_id for c in answer.citations} <= set(members), q
    # unscoped, the image question cites papers outside the collection: the scope is what kept them out
    free = chain.ask(questions[1])
    assert {c.paper_id for c in free.citations} - set(members)

    # named in the question, like authors and categories
    named = chain.ask("In my RL reading collection, how do agents explore efficiently?")
    assert named.filters.get("collection") == "RL reading"
    assert named.citations and {c.paper_id for c in named.citations} <= set(members)
    other = chain.ask("Which papers in the collection called 'RL reading' use diffusion models?")
    assert other.filters.get("collection") == "RL reading"
    # a word that is not a collection name is not a filter
    plain = chain.ask("How do agents explore efficiently in a large collection of tasks?")
    assert "collection" not in plain.filters


def test_membership_survives_reingest_and_rebuild(sample_rt) -> None:
    rt = sample_rt
    members = set(_ids(rt, text="diffusion"))
    sets = rt.collections()
    sets.add("Diffusion", members)
    rt.ingestor(progress=False).ingest(SAMPLE)  # unchanged files
    assert sets.members("Diffusion") == members
    rt.store.reset()  # `ingest --rebuild`
    assert rt.store.count_chunks() == 0
    rt.ingestor(progress=False).ingest(SAMPLE)
    assert sets.members("Diffusion") == members
    assert set(_ids(rt, paper_ids=sorted(members))) == members  # the same ids are stored again


def test_ingest_into_a_collection_counts_duplicates_as_the_stored_paper(make_runtime, tmp_path: Path) -> None:
    rt = make_runtime()
    ing = rt.ingestor(progress=False)
    first = Paper(id="a1", abstract="We study sparse attention for long documents and show it scales linearly.",
                  title="Sparse attention", doi="10.1/abc")
    other = Paper(id="b2", abstract="A survey of graph neural networks for molecules and their benchmarks.",
                  title="GNN survey")
    ing.ingest_papers([first, other])
    again = Paper(id="c3", abstract=first.abstract, title="Sparse attention (preprint)", doi="10.1/abc")
    report = ing.ingest_papers([again], collection="To read")
    assert report.duplicates == 1 and report.collected == 1
    assert rt.collections().members("To read") == {"a1"}
    # records that name their own collections (a Zotero library's) are placed in them
    tagged = Paper(id="d4", abstract="Contrastive pretraining of speech encoders with masked prediction targets.",
                   title="Speech", collections=["Audio", "Audio/Speech"])
    ing.ingest_papers([tagged])
    assert rt.collections().counts() == {"Audio": 1, "Audio/Speech": 1, "To read": 1}


def test_sync_removes_only_what_left_the_source(make_runtime) -> None:
    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE[:1])
    ids = rt.store.paper_ids()[:4]
    sets = rt.collections()
    sets.add("Mine", ids[:2])  # by hand: no source
    assert sets.sync("/lib/zotero.sqlite", {"Mine": ids[2:4], "Z/Nested": ids[:1]}) == {"added": 3, "removed": 0}
    assert sets.members("Mine") == set(ids[:4])
    assert sets.sync("/lib/zotero.sqlite", {"Mine": ids[3:4]}) == {"added": 0, "removed": 2}
    assert sets.members("Mine") == {ids[0], ids[1], ids[3]}  # the hand-made ones stay
    assert "Z/Nested" not in sets.counts()


def test_memberships_written_under_the_old_origin_key_still_sync(make_runtime) -> None:
    """Membership rows written before ``origin`` was named so hold the synced file under ``source``: a sync
    from that file still finds them (and removes what left it), a rename keeps where they came from, and a
    paper added by hand to its collection becomes hand-made (the old key does not linger beside the new)."""
    from helpers import rename_metadata_key

    from rag.index import collections

    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE[:1])
    ids = rt.store.paper_ids()[:3]
    sets = rt.collections()
    sets.add("Mine", ids[:1])  # by hand
    assert sets.sync("/lib/zotero.sqlite", {"Z": ids[1:3], "Y": ids[:1]}) == {"added": 3, "removed": 0}
    col = sets._rows()
    assert rename_metadata_key(col, collections.ORIGIN, collections.OLD_ORIGIN) == 4
    assert sets.has_origin("/lib/zotero.sqlite") and not sets.has_origin("/lib/other.sqlite")
    sets.add("Z", ids[1:2])  # now by hand
    sets.rename("Y", "Zotero/Y")
    rows = col.get(include=["metadatas"])["metadatas"]
    assert sorted(collections.origin_of(md) for md in rows) == ["", "", "/lib/zotero.sqlite", "/lib/zotero.sqlite"]
    assert sets.sync("/lib/zotero.sqlite", {}) == {"added": 0, "removed": 2}
    assert sets.counts() == {"Mine": 1, "Z": 1} and sets.members("Z") == {ids[1]}


class _Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def test_collection_commands_and_bad_input(sample_rt, capsys: pytest.CaptureFixture[str]) -> None:
    from rag.cli import main

    sample_rt.close()  # the embedded store belongs to one process at a time: the commands below open it

    def _cli(*args: str) -> _Ran:  # in this process (the commands are the same as the subprocess ones)
        capsys.readouterr()
        rc = main(list(args))
        out = capsys.readouterr()
        return _Ran(rc, out.out, out.err)

    out = _cli("collection", "add", "Ünï \"quoted\" 🚀/Child", "--search", "diffusion")
    assert out.returncode == 0, out.stderr
    listed = json.loads(_cli("collection", "list", "--json").stdout)
    assert [c["name"] for c in listed] == ["Ünï \"quoted\" 🚀/Child"] and listed[0]["papers"] >= 2
    n = listed[0]["papers"]
    papers = json.loads(_cli("papers", "--json", "--collection", "Ünï \"quoted\" 🚀/Child").stdout)
    assert len(papers) == n and all("diffusion" in f"{p['label']} {p['abstract']}".lower() for p in papers)

    before = _cli("collection", "list", "--json").stdout
    for bad in (("collection", "add", "", "--search", "x"), ("collection", "add", "a/", "--search", "diffusion"),
                ("collection", "add", "tab\there", "--search", "diffusion"),
                ("collection", "add", "New", "--paper-id", "no-such-paper"),
                ("collection", "add", "New"),
                ("collection", "delete", "Unknown"), ("collection", "rename", "Unknown", "X"),
                ("ask", "--collection", "Ünï quoted", "what is diffusion?")):
        res = _cli(*bad)
        assert res.returncode == 2 and res.stderr.startswith("paperchat: error:"), (bad, res.stderr)
        assert "Traceback" not in res.stderr
    assert "did you mean" in res.stderr  # the near-miss name is suggested
    assert _cli("collection", "list", "--json").stdout == before  # nothing changed

    assert _cli("collection", "rename", "Ünï \"quoted\" 🚀/Child", "Diffusion").returncode == 0
    assert _cli("collection", "remove", "Diffusion", "--paper-id", papers[0]["id"]).returncode == 0
    assert json.loads(_cli("collection", "list", "--json").stdout) == [{"name": "Diffusion", "papers": n - 1}]
    stats = json.loads(_cli("stats", "--json").stdout)
    assert _cli("collection", "delete", "Diffusion").returncode == 0
    assert json.loads(_cli("collection", "list", "--json").stdout) == []
    assert json.loads(_cli("stats", "--json").stdout)["papers"] == stats["papers"]  # the papers stay


def test_killed_ingest_into_a_collection_ends_with_exact_membership(paperchat_home: Path) -> None:
    env = {**os.environ, "PAPERCHAT_INGEST__BATCH_PAPERS": "8"}
    proc = subprocess.Popen(paperchat_cmd("-v", "ingest", "--collection", "Seeds", *map(str, SAMPLE)), cwd=ROOT,
                            env=env, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen, deadline = 0, time.time() + 240
    for line in proc.stderr:
        seen += "batch written" in line
        if seen >= 2 or time.time() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert seen == 2
    done = _cli("ingest", "--json", "--collection", "Seeds", *map(str, SAMPLE), env=env)
    assert done.returncode == 0, done.stderr
    papers = json.loads(_cli("stats", "--json").stdout)["papers"]
    assert json.loads(_cli("collection", "list", "--json").stdout) == [{"name": "Seeds", "papers": papers}]


def test_collections_on_a_chroma_server(chroma_server: int, make_runtime) -> None:
    over = {"store": {"mode": "server", "host": "127.0.0.1", "port": chroma_server, "chroma_collection": "colltest"}}
    rt = make_runtime(**over)
    rt.ingestor(progress=False).ingest(SAMPLE[:1], collection="Server set")
    n = len(rt.store.paper_ids())
    other = make_runtime(**over)  # another process's view: membership is in the server, not in this one
    assert Collections(other.read_store()).counts() == {"Server set": n}


def test_names_are_checked() -> None:
    assert check_name("  Reviews/RLHF  ") == "Reviews/RLHF"
    for bad in ("", "   ", "/x", "x/", "a//b", "x" * 201, "line\nbreak"):
        with pytest.raises(InputError):
            check_name(bad)


def test_a_zotero_library_brings_its_collections_and_keeps_them_in_sync(make_runtime, tmp_path: Path) -> None:
    from dataclasses import replace

    from rag.qa.chain import AnswerChain
    from tests import zotero_fixture as zf

    lib = zf.build(tmp_path / "Zotero" / "zotero.sqlite", 124)
    rt = make_runtime()
    ing = rt.ingestor(progress=False)
    report = ing.ingest([lib])
    want: dict[str, set[str]] = {}
    for e in zf.expected(124).values():
        for name in e.collections:
            want.setdefault(name, set()).add(e.id)
    sets = rt.collections()
    assert sets.counts() == {n: len(v) for n, v in sorted(want.items(), key=lambda kv: kv[0].casefold())}
    assert all(sets.members(n) == v for n, v in want.items())
    assert report.collected == sum(len(v) for v in want.values())

    answer = AnswerChain(rt).ask("In my Reading list collection, how are sea levels forecast?")
    assert answer.filters.get("collection") == "Reading list"
    assert answer.citations and {c.paper_id for c in answer.citations} <= want["Reading list"]

    # In Zotero, the attention paper leaves "Reading list" (it stays in ML/NLP); a hand-made collection holds it too;
    # the tides paper's abstract is edited.
    attention, tides = zf.EXPECTED[2].id, zf.EXPECTED[1].id
    sets.add("Mine", [attention])
    edited = zf.ABS["tides"] + " Storm surges are forecast too."
    moved = [replace(e, collections=[c for c in e.collections if c != 6]) if e.item_id == 2 else
             replace(e, fields={**e.fields, "abstractNote": edited}) if e.item_id == 1 else e
             for e in zf.LIBRARY]
    lib.unlink()
    zf.build(lib, 124, moved)
    chunks_before = {p: rt.store.chunk_states([p]) for p in rt.store.paper_ids()}
    again = ing.ingest([lib.parent])  # the data folder this time: the same library, the same source
    assert (again.added, again.updated, again.unchanged) == (0, 1, len(zf.expected(124)) - 1), again
    assert again.uncollected == 1
    assert rt.store.papers([tides])[0].abstract == edited
    assert {p: rt.store.chunk_states([p]) for p in rt.store.paper_ids() if p != tides} == \
        {p: s for p, s in chunks_before.items() if p != tides}  # only the edited item was rewritten
    assert sets.members("Reading list") == want["Reading list"] - {attention}
    assert attention in sets.members("ML/NLP") and sets.members("Mine") == {attention}


def test_eval_within_a_collection_keeps_the_distractors_out(tmp_path: Path) -> None:
    distractors = ROOT / "tests" / "fixtures" / "loaders" / "arxiv_snapshot.jsonl"
    out = tmp_path / "report"
    res = _cli("eval", "--limit", "6", "--distractors", str(distractors), "--collection", "Seeds", "--out", str(out),
               "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["meta"]["collection"] == "Seeds"
    rows = report["rows"]
    assert len(rows) == 6 and all(r["filters"].get("collection") == "Seeds" for r in rows)
    from rag.ingest.loaders import load

    outside = {p.id for p in load(distractors).papers}
    assert not any(set(r["cited"]) & outside for r in rows)
