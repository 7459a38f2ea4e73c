"""Saved conversations (rag/conversations.py): turns kept per owner in SQLite, ids by prefix, a corrupt or
foreign file refused with its path, and ``Answer.from_dict`` inverting ``to_dict``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rag.answer import Answer, Citation, StatementCheck
from rag.config import Settings
from rag.conversations import LOCAL_OWNER, TITLE_CHARS, ConversationStore
from rag.errors import ConfigError, InputError


def answer(question: str, paper: str = "arxiv:2401.00001", title: str = "Energy loss in RLHF") -> Answer:
    cite = Citation(n=1, paper_id=paper, title=title, authors=["Ann Lee", "Bo Chen"], categories=["RL"],
                    year=2024, abstract="We study energy loss. It penalizes drift.", summary="It studies loss.",
                    evidence="We study energy loss.", supported=True, url="https://arxiv.org/abs/2401.00001")
    st = StatementCheck(text="It studies energy loss", cited=[1], supported=False, why="caution: x",
                        verdict="not_in_source", rule="numbers", said="energy", source_says="")
    return Answer(question=question, standalone_question=question + " ; more", answer="It studies loss [1].",
                  answerable=True, mode="extractive", filters={"collection": "To read", "paper_ids": ["a"]},
                  citations=[cite], retrieved=[{"paper_id": paper, "score": 0.5}], timings={"total_ms": 12.5},
                  warnings=["w"], complete=False, closest=[{"paper_id": "p", "title": "T"}], statements=[st])


def test_answer_round_trips_through_its_dict() -> None:
    a = answer("What is energy loss?")
    back = Answer.from_dict(json.loads(json.dumps(a.to_dict())))
    assert back == a and back.to_dict() == a.to_dict()
    assert back.citations[0] == a.citations[0] and back.statements[0].verdict == "not_in_source"
    with pytest.raises(ValueError, match="'answer'"):
        Answer.from_dict({"question": "q", "answerable": True, "mode": "extractive"})
    with pytest.raises(ValueError, match="wrong shape"):
        Answer.from_dict(a.to_dict() | {"citations": [{"n": 1}]})


def test_turns_saved_listed_loaded_renamed_deleted(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite")
    assert store.list(LOCAL_OWNER) == [] and store.latest(LOCAL_OWNER) is None
    long_q = "What is the energy loss phenomenon in RLHF " + "and why " * 30
    cid = store.append_turn(LOCAL_OWNER, None, answer(long_q))
    assert store.append_turn(LOCAL_OWNER, cid, answer("What does it penalize?")) == cid
    other = store.create(LOCAL_OWNER)
    store.append_turn(LOCAL_OWNER, other, answer("Federated learning?", paper="doi:10.1/x"))
    listed = store.list(LOCAL_OWNER)
    assert [c.id for c in listed] == [other, cid]  # the latest updated first
    assert [c.turns for c in listed] == [1, 2] and listed[0].title == "Federated learning?"
    shortened = listed[1].title
    assert len(shortened) <= TITLE_CHARS and shortened.endswith("\u2026") and long_q.startswith(shortened[:-1])
    loaded = store.load(LOCAL_OWNER, cid[:6])
    assert [a.question for a in loaded.answers] == [long_q, "What does it penalize?"]
    assert loaded.answers[0] == answer(long_q)
    store.append_turn(LOCAL_OWNER, cid, answer("And the dataset?"))  # the older one is the latest again
    latest = store.latest(LOCAL_OWNER)
    assert latest is not None and latest.id == cid and len(latest.answers) == 3
    assert store.rename(LOCAL_OWNER, cid[:5], "  RLHF\nenergy  ") == cid
    assert store.load(LOCAL_OWNER, cid).title == "RLHF energy"
    with pytest.raises(InputError, match="empty"):
        store.rename(LOCAL_OWNER, cid, "  ")
    assert store.delete(LOCAL_OWNER, cid) == cid
    assert [c.id for c in store.list(LOCAL_OWNER)] == [other]
    with pytest.raises(InputError, match="no conversation with id"):
        store.load(LOCAL_OWNER, cid)
    # a turn for a conversation deleted meanwhile (another tab) starts a new one instead of failing
    again = store.append_turn(LOCAL_OWNER, cid, answer("Back again?"))
    assert again != cid and store.load(LOCAL_OWNER, again).title == "Back again?"
    with sqlite3.connect(store.path) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("SELECT COUNT(*) FROM turns WHERE conversation = ?", (cid,)).fetchone()[0] == 0


def test_two_owners_never_see_each_other(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite")
    ann = store.append_turn("ann", None, answer("Ann's question"))
    bob = store.append_turn("bob", None, answer("Bob's question"))
    assert [c.title for c in store.list("ann")] == ["Ann's question"]
    assert [c.title for c in store.list("bob")] == ["Bob's question"]
    for action in (lambda: store.load("bob", ann), lambda: store.rename("bob", ann, "mine"),
                   lambda: store.delete("bob", ann)):
        with pytest.raises(InputError, match="no conversation"):
            action()
    # bob appending to ann's id makes bob a conversation of his own; ann's is untouched
    mine = store.append_turn("bob", ann, answer("Sneaky"))
    assert mine != ann and store.load("ann", ann).turns == 1 and store.load("ann", ann).title == "Ann's question"
    assert {c.id for c in store.list("bob")} == {bob, mine}


def test_an_ambiguous_prefix_names_the_candidates(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite")
    ids = [store.append_turn(LOCAL_OWNER, None, answer(f"Question {i}")) for i in range(40)]
    firsts = [i[0] for i in ids]
    shared = next(c for c in firsts if firsts.count(c) > 1)  # 40 ids over 16 hex digits: one repeats
    with pytest.raises(InputError, match=f"the id '{shared}' is ambiguous: {firsts.count(shared)} conversations"):
        store.resolve(LOCAL_OWNER, shared)
    assert store.resolve(LOCAL_OWNER, ids[3][:12].upper()) == ids[3]
    with pytest.raises(InputError, match="not a conversation id"):
        store.resolve(LOCAL_OWNER, "xyz")


def test_a_corrupt_or_foreign_file_is_refused_with_its_path(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all, " * 100)
    with pytest.raises(ConfigError, match=r"junk\.sqlite: the conversations file cannot be read"):
        ConversationStore(junk).list(LOCAL_OWNER)
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as con:  # an earlier layout: no schema version, turns without answers
        con.execute("CREATE TABLE conversations (id TEXT, owner TEXT, title TEXT, created TEXT, updated TEXT)")
        con.execute("CREATE TABLE turns (conversation TEXT, n INTEGER, question TEXT)")
    with pytest.raises(ConfigError, match=r"old\.sqlite: not a conversations file of this paperchat \(schema "
                                          r"version missing, expected 1"):
        ConversationStore(old).list(LOCAL_OWNER)
    bad_turn = tmp_path / "bad.sqlite"
    store = ConversationStore(bad_turn)
    cid = store.append_turn(LOCAL_OWNER, None, answer("Q"))
    with sqlite3.connect(bad_turn) as con:
        con.execute("UPDATE turns SET answer = '{\"question\": \"Q\"}'")
    with pytest.raises(ConfigError, match=rf"bad\.sqlite: conversation {cid[:8]}, turn 1: unreadable answer"):
        store.load(LOCAL_OWNER, cid)


def test_the_path_is_a_setting(tmp_path: Path) -> None:
    assert Settings(home=tmp_path).conversations_path == tmp_path / "conversations.sqlite"
    assert Settings(home=tmp_path, conversations_file=tmp_path / "x.db").conversations_path == tmp_path / "x.db"


KILLER = """
import os, sys
from rag.conversations import ConversationStore
from tests.test_conversations import answer
store = ConversationStore(sys.argv[1])
cid = store.append_turn("local", None, answer("Saved turn"))
print(cid, flush=True)
writing = store._connect()  # a second turn half-written (its transaction open) when the process dies
con = writing.__enter__()
con.execute("INSERT INTO turns VALUES (?, 1, 'lost', '{}', 'now')", (cid,))
os._exit(9)
"""


def test_a_killed_writer_loses_only_the_turn_being_written(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", KILLER, str(path)], capture_output=True, text=True, cwd=root,
                          env={"PYTHONPATH": str(root)}, timeout=60)
    assert done.returncode == 9, done.stderr
    cid = done.stdout.strip()
    loaded = ConversationStore(path).load(LOCAL_OWNER, cid)
    assert [a.question for a in loaded.answers] == ["Saved turn"]


def test_turns_saved_at_once_from_several_threads_all_kept(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    store = ConversationStore(tmp_path / "c.sqlite")
    cid = store.append_turn(LOCAL_OWNER, None, answer("Q0"))
    with ThreadPoolExecutor(8) as pool:  # two browser tabs of one conversation, many times over
        list(pool.map(lambda i: store.append_turn(LOCAL_OWNER, cid, answer(f"Q{i}")), range(1, 41)))
    loaded = store.load(LOCAL_OWNER, cid)
    assert sorted(a.question for a in loaded.answers) == sorted(f"Q{i}" for i in range(41))


ANSWERING = """
import sys, time
from types import ModuleType, SimpleNamespace
from tests.test_conversations import answer


def ask(lib, question, history=(), **_):  # the answer pipeline (ui.library.ask), its model not loaded
    if history:  # the second turn is still being answered when the kill comes
        print("answering", flush=True)
        time.sleep(60)
    return answer(question)


sys.modules["ui.library"] = ModuleType("ui.library")
sys.modules["ui.library"].ask, sys.modules["ui.library"].Library = ask, object
from ui.saved_conversations import ask_saved

lib = SimpleNamespace(settings=SimpleNamespace(conversations_path=sys.argv[1]))
_, cid = ask_saved(lib, "key:abc", "new", "First turn")
print(cid, flush=True)
ask_saved(lib, "key:abc", cid, "Second turn")
"""


def test_a_server_killed_while_answering_keeps_every_earlier_turn(tmp_path: Path) -> None:
    """The API's and MCP's path (ui.saved_conversations.ask_saved), SIGKILLed while its second turn is being
    answered: the first turn is there, readable, and the conversation goes on."""
    import signal

    path = tmp_path / "c.sqlite"
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-c", ANSWERING, str(path)], stdout=subprocess.PIPE, text=True,
                            cwd=root, env={"PYTHONPATH": str(root)})
    try:
        assert proc.stdout is not None
        cid = proc.stdout.readline().strip()
        assert proc.stdout.readline().strip() == "answering", "the second turn was never asked"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    store = ConversationStore(path)
    assert [a.question for a in store.load("key:abc", cid).answers] == ["First turn"]
    assert store.append_turn("key:abc", cid, answer("Second turn, asked again")) == cid
    assert store.list("key:abc")[0].turns == 2
