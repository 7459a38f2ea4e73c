"""The app's event handlers called as plain methods over a typed ``Session`` (no browser, no server): the chat's
turn bookkeeping (which message shows which answer, what the Sources panel shows, refusals that keep no turn, a new
conversation keeping the rate limit), votes, and the Library's search and collection handlers."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterator
from typing import Any

import gradio as gr
import pytest
from conftest import SAMPLE

from rag.config import get_settings
from rag.qa.chain import AnswerChain
from rag.runtime import Runtime
from ui import render
from ui.tabs import chat, collections
from ui.tabs import library as library_tab
from ui.tabs.context import AppContext
from ui.tabs.session import Session

EPPO_FILE = next(p for p in SAMPLE if p.name.startswith("003_"))
QUESTION = "What does the EPPO algorithm penalize when training reward models for RLHF?"
FOLLOW_UP = "Who wrote it?"


@pytest.fixture(scope="module")
def ctx(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppContext]:
    """One small library for the module (the collection test leaves its collections as it found them)."""
    settings = get_settings(home=tmp_path_factory.mktemp("home"), ui={"stream_delay_ms": 0},
                            limits={"requests_per_minute": 3})
    rt = Runtime(settings, _embedder=embedder)
    assert rt.ingestor(progress=False).ingest([EPPO_FILE]).added > 0
    yield AppContext(rt, settings, AnswerChain(rt), gr.Blocks())
    rt.close()


def ask(handlers: chat.ChatHandlers, state: Session, text: str, history: list[dict[str, Any]] | None = None
        ) -> tuple[Any, ...]:
    """The last update ``ask`` yields for ``text`` (extractive, k=5, no filters)."""
    return list(handlers.ask(text, history or [], state, 5, "extractive", None, None, None, None))[-1]


def plain(message: str) -> str:
    return html.unescape(message).replace("\\", "")


def test_each_answer_is_one_turn_and_a_click_shows_its_sources(ctx: AppContext) -> None:
    handlers, state = chat.ChatHandlers(ctx), Session()
    history, same, sources, *_ = ask(handlers, state, QUESTION)
    assert same is state and len(state.answers) == 1 and state.msg_turn == [None, 0] and state.shown == 0
    assert "EPPO" in plain(sources) and [m["role"] for m in history] == ["user", "assistant"]
    history, _, sources, *_ = ask(handlers, state, FOLLOW_UP, history)
    assert state.msg_turn == [None, 0, None, 1] and state.shown == 1 and len(history) == 4

    shown, _ = chat.show_turn(state, gr.SelectData(None, {"index": 1, "value": ""}))  # the first answer
    assert state.shown == 0 and shown == render.sources_html(state.answers[0], 0)
    for index in (1, 0, [2, 0], 9):  # the one already shown, a question, a question as [row, col], past the end
        assert chat.show_turn(state, gr.SelectData(None, {"index": index, "value": ""}))[0] == gr.skip()
    assert state.shown == 0

    reset = chat.new_conversation(state)
    fresh = reset[1]
    assert reset[0] == [] and fresh.answers == [] and fresh.msg_turn == [] and fresh.shown is None
    assert fresh.stamps == state.stamps and len(fresh.stamps) == 2  # the rate limit holds across conversations
    assert reset[4:] == (*chat.CLEARED_FILTERS, [], "")


def test_a_refused_question_leaves_a_notice_and_no_turn(ctx: AppContext) -> None:
    handlers, state = chat.ChatHandlers(ctx), Session()
    assert len(list(handlers.ask("   ", [], state, 5, "extractive", None, None, None, None))) == 1
    assert state == Session()  # nothing asked, nothing kept

    history, _, _, question, *controls = ask(handlers, state, "x" * 5000)
    assert "pc-error" in history[-1]["content"] and question == "x" * 5000  # the question stays to be edited
    assert state.answers == [] and state.msg_turn == [None, None] and controls == [gr.skip()] * 5

    state.stamps = [time.time()] * 3  # the session's limit (3 questions a minute) reached
    history, *_ = ask(handlers, state, QUESTION, history)
    assert "pc-error" in history[-1]["content"] and "minute" in plain(history[-1]["content"])
    assert state.answers == [] and state.msg_turn == [None] * 4 and len(history) == 4


def test_a_vote_on_an_answer_is_recorded_and_one_on_a_question_is_not(ctx: AppContext) -> None:
    handlers, state = chat.ChatHandlers(ctx), Session()
    ask(handlers, state, QUESTION)
    handlers.vote(state, gr.LikeData(None, {"index": 0, "value": "", "liked": True}))  # the question
    assert not handlers.feedback.path.exists()
    handlers.vote(state, gr.LikeData(None, {"index": [1, 0], "value": "", "liked": False}))
    rows = [json.loads(line) for line in handlers.feedback.path.read_text().splitlines()]
    assert [(r["vote"], r["question"]) for r in rows] == [("down", QUESTION)]
    handlers.feedback.path.unlink()


def test_library_search_and_a_collection_that_loses_its_last_paper(ctx: AppContext) -> None:
    lib = library_tab.LibraryHandlers(ctx)
    with pytest.warns(UserWarning, match="year"):
        assert lib.search("", "", None, "not a year", "", None) == gr.skip()
    everything = lib.search("", "", None, "", "", None)
    rows = lib.search("EPPO", "", None, "", "", None)
    assert len(rows) == 1 and "EPPO" in str(rows[0][1]) and len(everything) > 1
    ticked = [[True, *rows[0][1:]]]

    colls = collections.CollectionHandlers(ctx, lib.search)
    note, table, chat_pick, lib_pick, name, listing = colls.change_collection(
        "add", ticked, "rlhf", None, "", "", None, "", "", None)
    assert note.startswith("Added 1 paper to **rlhf**") and "rlhf" in listing
    assert [r[-1] for r in table] == [r[-1] for r in everything]  # the search it was made from: the library
    assert name["value"] == "rlhf" and chat_pick["value"] is None and lib_pick["value"] is None

    out = collections.ask_these([[False, *rows[0][1:]]], "rlhf")  # nothing ticked: the chosen collection
    assert out[1:] == (None, "", "", "", "rlhf", [], "")

    note, table, chat_pick, lib_pick, _, listing = colls.change_collection(
        "remove", ticked, "rlhf", "rlhf", "", "", None, "", "", "rlhf")
    assert note.startswith("Removed 1 paper from **rlhf**") and "rlhf" not in listing
    assert chat_pick["value"] is None and lib_pick["value"] is None  # the emptied collection is gone from both
    assert [r[-1] for r in table] == [r[-1] for r in everything]  # the library, not the gone collection
    with pytest.warns(UserWarning, match="Tick papers"):
        assert collections.ask_these([[False, *rows[0][1:]]], None) == (gr.skip(),) * 8


def test_the_answer_length_control_shapes_the_answer(ctx: AppContext) -> None:
    """The chat's *Answer length* control (issue 32): brief is shorter than normal, no summary lines."""
    handlers = chat.ChatHandlers(ctx)
    answers = {}
    for length in ("normal", "brief"):
        state = Session()
        list(handlers.ask(QUESTION, [], state, 5, "extractive", None, None, None, None, None, None, length))
        answers[length] = state.answers[-1]
    assert answers["brief"].citations and len(answers["brief"].citations) <= 3
    assert len(answers["brief"].answer) < len(answers["normal"].answer)
    assert " \u2014 " not in answers["brief"].answer and " \u2014 " in answers["normal"].answer
