"""The conversations sidebar: the asker's saved conversations (rag.conversations; title and date, the latest
first), resuming one with its cited papers, renaming, deleting and exporting it, and a new chat.

Every answered turn is saved by the Chat tab's ``ask``; the list here follows it. With a login each user sees only
their own (``AppContext.owner``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from rag.conversations import ConversationInfo
from rag.errors import PaperchatError
from rag.references import STYLES
from ui import render, services
from ui.export import EXPORT_FORMATS, conversation_export
from ui.safe import inline
from ui.tabs.chat import CLEARED_FILTERS, SKIP_FILTERS, ChatTab, new_conversation
from ui.tabs.context import AppContext
from ui.tabs.session import Session

log = logging.getLogger(__name__)

FORMAT_CHOICES = [("Markdown (the conversation)", "md"), ("BibTeX (.bib)", "bib")] + [
    (f"References: {name}", name) for name in STYLES if name != "chicago-author-date"]


@dataclass
class Sidebar:
    """The sidebar's components that events read or write."""

    listing: gr.Radio
    new_btn: gr.Button
    title: gr.Textbox
    rename_btn: gr.Button
    delete_btn: gr.Button
    fmt: gr.Dropdown
    export_btn: gr.Button
    download: gr.File


def build() -> Sidebar:
    """The sidebar's components (inside ``gr.Sidebar``)."""
    gr.Markdown("## Conversations", elem_id="pc-conv-heading")
    new_btn = gr.Button("New chat", size="sm", variant="primary", elem_id="pc-conv-new")
    listing = gr.Radio([], value=None, label="Saved conversations", elem_id="pc-conversations",
                       info="the latest first; choose one to go on with it")
    title = gr.Textbox(label="Title", placeholder="choose a conversation", max_lines=1, elem_id="pc-conv-title")
    with gr.Row():
        rename_btn = gr.Button("Rename", size="sm", elem_id="pc-conv-rename", min_width=80)
        delete_btn = gr.Button("Delete", size="sm", variant="stop", elem_id="pc-conv-delete", min_width=80)
    fmt = gr.Dropdown(FORMAT_CHOICES, value="md", label="Export as", elem_id="pc-conv-format")
    export_btn = gr.Button("Export", size="sm", elem_id="pc-conv-export")
    download = gr.File(label="Download", visible=False, interactive=False, elem_id="pc-conv-download")
    return Sidebar(listing, new_btn, title, rename_btn, delete_btn, fmt, export_btn, download)


def label(c: ConversationInfo) -> str:
    """A conversation in the list: its title and when it was last updated (UTC)."""
    return f"{c.title} \u00b7 {c.updated[:16].replace('T', ' ')}"


class ConversationHandlers:
    """The sidebar's handlers (over the app's saved conversations)."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def listing(self, state: Session, request: gr.Request) -> tuple[Any, Any]:
        """The asker's conversations as the list's choices (the current one selected), and its title."""
        try:
            found = self.ctx.conversations.list(self.ctx.owner(request))
        except PaperchatError as e:
            gr.Warning(str(e))
            return gr.update(choices=[], value=None), gr.skip()
        current = next((c for c in found if c.id == state.conversation), None)
        return (gr.update(choices=[(label(c), c.id) for c in found], value=current.id if current else None),
                current.title if current else "")

    def resume(self, cid: str | None, state: Session, request: gr.Request) -> tuple[Any, ...]:
        """Take up a saved conversation: its turns in the chat, the last one's sources and filters, so a follow-up
        resolves against the papers it cited. Outputs: chat, state, sources, *filters, scope ids, scope, title."""
        keep = (gr.skip(),) * 3 + SKIP_FILTERS + (gr.skip(),) * 3
        if not cid or cid == state.conversation:
            return keep
        try:
            conv = self.ctx.conversations.load(self.ctx.owner(request), cid)
        except PaperchatError as e:
            gr.Warning(str(e))
            return keep
        fresh = Session.resumed(conv.id, conv.answers, state.stamps)
        chat: list[dict[str, Any]] = []
        for i, a in enumerate(conv.answers):
            chat += [{"role": "user", "content": inline(a.question, "chat")},
                     {"role": "assistant", "content": render.answer_markdown(a, i)}]
        last = conv.answers[-1] if conv.answers else None
        filters = (*services.controls_from_filters(last.filters), last.filters.get("collection")) if last \
            else CLEARED_FILTERS
        sources = render.sources_html(last, len(conv.answers) - 1) if last else render.sources_html(None)
        return chat, fresh, sources, *filters, [], "", conv.title

    def rename(self, title: str, state: Session, request: gr.Request) -> None:
        if not state.conversation:
            gr.Warning("Choose a conversation (or ask a question) first.")
            return
        try:
            self.ctx.conversations.rename(self.ctx.owner(request), state.conversation, title or "")
        except PaperchatError as e:
            gr.Warning(str(e))

    def delete(self, state: Session, request: gr.Request) -> tuple[Any, ...]:
        """Delete the current conversation and start a new one (the outputs of ``new_conversation``)."""
        if not state.conversation:
            gr.Warning("Choose a conversation to delete first.")
            return (gr.skip(),) * (4 + len(CLEARED_FILTERS) + 2)
        try:
            self.ctx.conversations.delete(self.ctx.owner(request), state.conversation)
        except PaperchatError as e:
            gr.Warning(str(e))
        return new_conversation(state)

    def export(self, fmt: str, state: Session) -> Any:
        """The current conversation as Markdown, its cited papers as .bib or in a citation style, for download."""
        if not state.answers:
            gr.Warning("Nothing to export yet: choose a conversation or ask a question first.")
            return gr.skip()
        try:
            text, suffix = conversation_export(state.answers, fmt or EXPORT_FORMATS[0])
        except PaperchatError as e:
            gr.Warning(str(e))
            return gr.skip()
        path = services.write_atomic(services.export_path(self.ctx.settings.home, suffix), text)
        log.info("exported %s", path)
        return self.ctx.download(path)


def wire(app: gr.Blocks, bar: Sidebar, chat: ChatTab, handlers: ConversationHandlers, session: gr.State,
         scope_ids: gr.State, after_ask: list[Any]) -> None:
    """The sidebar's events; ``after_ask`` are the chat's ask events, each followed by a refresh of the list."""
    refresh: dict[str, Any] = {"fn": handlers.listing, "inputs": [session], "outputs": [bar.listing, bar.title],
                               "show_progress": "hidden", "api_visibility": "private"}
    app.load(**refresh)
    for event in after_ask:
        event.then(**refresh)
    reset_outputs = [chat.chatbot, session, chat.sources, chat.download, *chat.filter_controls, scope_ids,
                     chat.scope_md]
    bar.new_btn.click(new_conversation, [session], reset_outputs, api_visibility="private").then(**refresh)
    bar.listing.input(handlers.resume, [bar.listing, session],
                      [chat.chatbot, session, chat.sources, *chat.filter_controls, scope_ids, chat.scope_md,
                       bar.title], api_visibility="private")
    bar.rename_btn.click(handlers.rename, [bar.title, session], None, api_visibility="private").then(**refresh)
    bar.delete_btn.click(handlers.delete, [session], reset_outputs, api_visibility="private").then(**refresh)
    bar.export_btn.click(handlers.export, [bar.fmt, session], [bar.download], api_visibility="private")
