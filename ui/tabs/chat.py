"""The Chat tab: filter controls, the conversation, its exports and the Sources panel, with their handlers."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from rag.answer import LENGTHS, Answer
from rag.errors import PaperchatError
from rag.index.paper_query import PaperQuery
from rag.limits import check_question
from rag.qa.chain import resolve_mode
from rag.qa.why import steering_command
from ui import render, services
from ui.assets import LATEX_DELIMITERS
from ui.export import bibtex, cited_papers, conversation_markdown, conversation_scope
from ui.safe import inline
from ui.tabs.context import AppContext
from ui.tabs.session import Session

log = logging.getLogger(__name__)

CLEARED_FILTERS = (None, "", "", "", None)  # category, author, year from, year to, collection
SKIP_FILTERS = (gr.skip(),) * len(CLEARED_FILTERS)


@dataclass
class ChatTab:
    """The Chat tab's components that events read or write."""

    category: gr.Dropdown
    collection: gr.Dropdown
    author: gr.Textbox
    year_from: gr.Textbox
    year_to: gr.Textbox
    k: gr.Slider
    mode: gr.Radio
    clear_btn: gr.Button
    scope_md: gr.Markdown
    chatbot: gr.Chatbot
    question: gr.Textbox
    ask_btn: gr.Button
    new_btn: gr.Button
    md_btn: gr.Button
    bib_btn: gr.Button
    download: gr.File
    sources: gr.Markdown
    length: gr.Radio | None = None  # brief, normal, thorough (rag.answer.AnswerLength)

    @property
    def filter_controls(self) -> list[Any]:
        """In the order of ``CLEARED_FILTERS`` and of ``ask``'s filter arguments."""
        return [self.category, self.author, self.year_from, self.year_to, self.collection]


def build(ctx: AppContext, cats: list[str], collection_choices: list[Any], examples: list[str]) -> ChatTab:
    """The tab's components (inside ``gr.Tab("Chat")``)."""
    settings = ctx.settings
    modes = ["extractive"] + ([] if settings.offline else ["llm"])
    with gr.Row(equal_height=True, elem_id="pc-controls"):
        category = gr.Dropdown(cats, value=None, label="Category", allow_custom_value=True,
                               elem_id="pc-category", scale=2, min_width=170)
        collection = gr.Dropdown(collection_choices, value=None, label="Collection", allow_custom_value=True,
                                 elem_id="pc-collection", scale=2, min_width=160)
        author = gr.Textbox(label="Author", placeholder="name or surname", elem_id="pc-author", scale=2,
                            min_width=140)
        year_from = gr.Textbox(label="Year from", placeholder="e.g. 2019", elem_id="pc-year-from",
                               scale=1, min_width=90)
        year_to = gr.Textbox(label="Year to", placeholder="e.g. 2024", elem_id="pc-year-to", scale=1,
                             min_width=90)
        k = gr.Slider(1, 20, value=settings.retrieval.k, step=1, label="Papers (k)", elem_id="pc-k",
                      scale=2, min_width=150)
        mode = gr.Radio(modes, value=resolve_mode(settings, None), label="Answer mode", elem_id="pc-mode", scale=2,
                        min_width=150)
        length = gr.Radio(list(LENGTHS), value="normal", label="Answer length", elem_id="pc-length", scale=2,
                          min_width=150)
        clear_btn = gr.Button("Clear filters", size="sm", elem_id="pc-clear-filters", scale=0,
                              min_width=110)
    scope_md = gr.Markdown("", elem_id="pc-scope")
    with gr.Row(equal_height=False):
        with gr.Column(scale=3, min_width=420):
            chatbot = gr.Chatbot(
                label="Conversation", elem_id="pc-chat", height=620, layout="bubble",
                latex_delimiters=LATEX_DELIMITERS, sanitize_html=True, allow_tags=False,
                render_markdown=True, line_breaks=True, buttons=["copy"],
                feedback_options=("Like", "Dislike"),
                examples=[{"text": q} for q in examples] or None,
                placeholder="**Ask about the papers in the library.** Try one of these:")
            with gr.Row(equal_height=True):
                question = gr.Textbox(show_label=False, placeholder="Ask a question about the papers…",
                                      lines=1, max_lines=6, scale=8, elem_id="pc-question",
                                      autofocus=True)
                ask_btn = gr.Button("Ask", variant="primary", scale=1, min_width=90, elem_id="pc-ask")
            with gr.Row():
                new_btn = gr.Button("New conversation", size="sm", elem_id="pc-new")
                md_btn = gr.Button("Export Markdown", size="sm", elem_id="pc-export-md")
                bib_btn = gr.Button("Export .bib", size="sm", elem_id="pc-export-bib")
            download = gr.File(label="Download", visible=False, interactive=False, elem_id="pc-download")
        with gr.Column(scale=2, min_width=340):
            gr.Markdown("### Sources", elem_id="pc-sources-title")
            sources = gr.Markdown(render.sources_html(None), elem_id="pc-sources", max_height=700,
                                  latex_delimiters=LATEX_DELIMITERS, sanitize_html=True)
    return ChatTab(category, collection, author, year_from, year_to, k, mode, clear_btn, scope_md, chatbot,
                   question, ask_btn, new_btn, md_btn, bib_btn, download, sources, length=length)


# ---- handlers ----------------------------------------------------------------------------------------
class ChatHandlers:
    """The handlers that need the runtime, the settings or the answer chain."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self.feedback = services.FeedbackLog(ctx.settings.home / "feedback.jsonl")
        self.delay = ctx.settings.ui.stream_delay_ms / 1000

    def ask(self, text: str, chat: list[dict[str, Any]], state: Session, k_: float, mode_: str,
            cat: str | None, who: str | None, y0: Any, y1: Any, coll: str | None = None,
            within: list[str] | None = None, length: str | None = None,
            request: gr.Request | None = None) -> Iterator[tuple[Any, ...]]:
        """Stream the answer into the chat, yielding (chat, state, sources, question, *filter controls); the
        answered turn is saved to the asker's conversation (``request``: whose, when there is a login)."""
        settings, chain = self.ctx.settings, self.ctx.chain
        keep = (gr.skip(), *SKIP_FILTERS)
        text = (text or "").strip()
        if not text:
            yield chat, state, gr.skip(), *keep
            return
        chat = list(chat or []) + [{"role": "user", "content": inline(text, "chat")}]
        state.msg_turn.append(None)
        streamed = ""
        steered = steering_command(text, state.pin, state.exclude, state.answers[-1] if state.answers else None)
        if steered is not None:  # /pin N|ID, /exclude N|ID: for the questions that follow (rag.qa.why)
            chat.append({"role": "assistant", "content": f'<span class="pc-note">{inline(steered, "chat")}</span>'})
            state.msg_turn.append(None)
            yield chat, state, gr.skip(), "", *SKIP_FILTERS
            return
        try:
            text = check_question(text, settings.limits)
            state.stamps = services.check_rate(state.stamps, settings.limits.requests_per_minute)
            filters = services.filters_from_controls(cat, who, y0, y1) or PaperQuery()
            filters.collection = (coll or "").strip() or None
            filters.paper_ids = list(within or [])
            turn = len(state.answers)
            chat.append({"role": "assistant", "content": render.streaming_markdown("")})
            state.msg_turn.append(None)
            yield chat, state, gr.skip(), "", *SKIP_FILTERS
            answer = None
            for item in chain.stream(text, history=state.answers, k=int(k_),
                                     filters=None if filters.is_empty() else filters,
                                     mode=chain.resolve_mode(mode_), length=length, pin=state.pin,
                                     exclude=state.exclude):
                if isinstance(item, Answer):
                    answer = item
                    continue
                streamed += item
                chat[-1] = {"role": "assistant", "content": render.streaming_markdown(streamed)}
                yield chat, state, gr.skip(), *keep
                if self.delay and mode_ == "extractive":
                    time.sleep(self.delay)
            assert answer is not None
            state.answers.append(answer)
            state.msg_turn[-1] = turn
            state.shown = turn
            self.save(state, answer, request)
            chat[-1] = {"role": "assistant", "content": render.answer_markdown(answer, turn)}
            yield (chat, state, render.sources_html(answer, turn), gr.skip(),
                   *services.controls_from_filters(answer.filters), answer.filters.get("collection"))
        except Exception as e:  # shown in the chat; the app goes on
            failed(chat, state, e, text, streamed)
            yield chat, state, gr.skip(), text, *SKIP_FILTERS

    def save(self, state: Session, answer: Answer, request: gr.Request | None) -> None:
        """Keep the turn (one transaction): a file that cannot be written warns, and the answer is still shown."""
        try:
            state.conversation = self.ctx.conversations.append_turn(self.ctx.owner(request), state.conversation,
                                                                    answer)
        except (PaperchatError, OSError) as e:
            log.error("saving the turn failed: %s", e)
            gr.Warning(f"This answer could not be saved: {e}")

    def vote(self, state: Session, evt: gr.LikeData) -> None:
        turn = state.turn_at(evt.index)
        if turn is None or not isinstance(evt.liked, bool):
            return
        self.feedback.record(state.answers[turn], evt.liked, history=state.answers[:turn])
        gr.Info("Thanks: feedback saved.")

    def export(self, state: Session, kind: str) -> Any:
        """The conversation as Markdown (``kind`` "md") or its cited papers as BibTeX, for the download."""
        answers = state.answers
        home = self.ctx.settings.home
        if not answers:
            gr.Warning("Nothing to export yet: ask a question first.")
            return gr.skip()
        if kind == "md":
            path = services.write_atomic(services.export_path(home, ".md"), conversation_markdown(answers))
        else:
            papers = cited_papers(answers)
            if not papers:
                gr.Warning("No paper has been cited yet.")
                return gr.skip()
            path = services.write_atomic(services.export_path(home, ".bib"),
                                         bibtex(papers, scope=conversation_scope(answers)))
        log.info("exported %s", path)
        return self.ctx.download(path)


def failed(chat: list[dict[str, Any]], state: Session, error: Exception, text: str, streamed: str) -> None:
    """The chat after a failed question: a notice (a refusal says why, a bug points to the server log), after what
    the reader already saw, marked as cut off and unchecked."""
    if isinstance(error, PaperchatError):
        log.info("question refused: %s", error)
        note = str(error)
    else:  # a bug or an outage: the details go to the log, not to the browser
        log.error("answering %r failed", text[:200], exc_info=error)
        note = "something went wrong while answering; the server log has the details"
    content = render.notice_markdown(note)
    if streamed.strip():
        content = (inline(streamed.rstrip(), "chat") + " \u2026\n\n"
                   + render.notice_markdown(f"answer incomplete and its citations unchecked: {note}"))
    message = {"role": "assistant", "content": content}
    if chat[-1]["role"] == "assistant":
        chat[-1] = message
    else:
        chat.append(message)
        state.msg_turn.append(None)


def pick_example(evt: gr.SelectData) -> str:
    return evt.value.get("text", "") if isinstance(evt.value, dict) else str(evt.value or "")


def new_conversation(state: Session) -> tuple[Any, ...]:
    return ([], state.fresh(), render.sources_html(None), gr.update(value=None, visible=False), *CLEARED_FILTERS,
            [], "")


def show_turn(state: Session, evt: gr.SelectData) -> Any:
    """Show the sources of the answer clicked in the chat (nothing changes for a question or the one shown)."""
    turn = state.turn_at(evt.index)
    if turn is None or turn == state.shown:
        return gr.skip(), state
    state.shown = turn
    return render.sources_html(state.answers[turn], turn), state


# ---- wiring ------------------------------------------------------------------------------------------
def wire(tab: ChatTab, handlers: ChatHandlers, session: gr.State, scope_ids: gr.State) -> list[Any]:
    """The tab's events, in the order the app has always registered them (Gradio numbers them in that order);
    returns the events that answer a question (the sidebar follows each with its list)."""
    ask, filters = handlers.ask, tab.filter_controls  # one bound method: one default concurrency group
    ask_io: dict[str, Any] = {"inputs": [tab.question, tab.chatbot, session, tab.k, tab.mode, *filters, scope_ids,
                                         tab.length],
                              "outputs": [tab.chatbot, session, tab.sources, tab.question, *filters],
                              "show_progress": "minimal"}
    asked = [tab.question.submit(ask, api_name="ask", **ask_io),  # a stable API name for scripted clients
             tab.ask_btn.click(ask, api_visibility="undocumented", **ask_io),
             tab.chatbot.example_select(pick_example, None, tab.question, show_progress="hidden", queue=False).then(
                 ask, api_visibility="undocumented", **ask_io)]

    reset_io: dict[str, Any] = {"inputs": [session],
                                "outputs": [tab.chatbot, session, tab.sources, tab.download, *filters, scope_ids,
                                            tab.scope_md]}
    tab.new_btn.click(new_conversation, api_name="new_conversation", **reset_io)
    tab.chatbot.clear(new_conversation, **reset_io)
    tab.clear_btn.click(lambda: (*CLEARED_FILTERS, [], ""), None, [*filters, scope_ids, tab.scope_md], queue=False)

    tab.chatbot.select(show_turn, [session], [tab.sources, session], show_progress="hidden")
    tab.chatbot.like(handlers.vote, [session], None, show_progress="hidden")
    tab.md_btn.click(lambda s: handlers.export(s, "md"), [session], [tab.download])
    tab.bib_btn.click(lambda s: handlers.export(s, "bib"), [session], [tab.download])
    return asked
