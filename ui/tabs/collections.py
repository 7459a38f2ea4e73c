"""Reading lists, inside the Library tab: the actions under the table (add, remove, ask about, export the ticked
papers or the chosen collection) and the collection pickers kept in step across both tabs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gradio as gr

from rag.errors import InputError
from ui import library, render, services
from ui.export import as_citation as export_citation
from ui.export import bibtex, papers_markdown
from ui.safe import inline
from ui.tabs.chat import CLEARED_FILTERS, ChatTab
from ui.tabs.context import AppContext

if TYPE_CHECKING:
    from ui.tabs.library import LibraryTab

log = logging.getLogger(__name__)

WIDGETS = 4  # what collection_widgets refreshes: the two pickers, the name field and the list


@dataclass
class CollectionActions:
    """The row of actions under the Library table, its status line and its download."""

    name: gr.Dropdown
    add_btn: gr.Button
    remove_btn: gr.Button
    ask_these_btn: gr.Button
    md_btn: gr.Button
    bib_btn: gr.Button
    status: gr.Markdown
    download: gr.File


def build(counts: dict[str, int]) -> CollectionActions:
    """The actions row (inside the Library tab, under the table)."""
    with gr.Row(equal_height=True, elem_id="pc-coll-actions"):
        name = gr.Dropdown(list(counts), value=None, allow_custom_value=True, label="Collection name",
                           info="pick one or type a new name", elem_id="pc-coll-name", scale=3,
                           min_width=200)
        add_btn = gr.Button("Add to collection", elem_id="pc-coll-add", scale=1, min_width=140)
        remove_btn = gr.Button("Remove from collection", elem_id="pc-coll-remove", scale=1, min_width=160)
        ask_these_btn = gr.Button("Ask about these papers", variant="primary", elem_id="pc-ask-these",
                                  scale=1, min_width=170)
        md_btn = gr.Button("Export Markdown", size="sm", elem_id="pc-lib-export-md", scale=0,
                           min_width=130)
        bib_btn = gr.Button("Export .bib", size="sm", elem_id="pc-lib-export-bib", scale=0,
                            min_width=100)
    status = gr.Markdown("Tick papers in the table to add them to a collection, ask about them or "
                         "export them (with none ticked, the chosen collection is used).",
                         elem_id="pc-coll-status")
    download = gr.File(label="Download", visible=False, interactive=False, elem_id="pc-lib-download")
    return CollectionActions(name, add_btn, remove_btn, ask_these_btn, md_btn, bib_btn, status, download)


# ---- handlers ----------------------------------------------------------------------------------------
class CollectionHandlers:
    """``search`` is the Library tab's search handler: a change refreshes the table through it."""

    def __init__(self, ctx: AppContext, search: Callable[..., Any]) -> None:
        self.ctx = ctx
        self.search = search

    def collection_widgets(self, chat_coll: str | None, lib_value: str | None, name: str | None) -> tuple[Any, ...]:
        """The collection pickers, the name field and the list, refreshed (a value whose collection is gone
        is cleared)."""
        now = library.collection_counts(self.ctx.runtime)
        choices = render.collection_choices(now)
        return (gr.update(choices=choices, value=chat_coll if chat_coll in now else None),
                gr.update(choices=choices, value=lib_value if lib_value in now else None),
                gr.update(choices=list(now), value=name), render.collections_markdown(now))

    def remaining(self, name: str | None) -> bool:
        return bool(name) and name in library.collection_counts(self.ctx.runtime)

    def change_collection(self, action: str, rows: Any, name: str | None, chat_coll: str | None, text: str,
                          who: str, cat: str | None, y0: Any, y1: Any, lib_value: str | None) -> tuple[Any, ...]:
        """Add (``action`` "add") or remove the ticked papers: (status, table, *the collection widgets)."""
        ids = render.selected_ids(rows)
        runtime = self.ctx.runtime
        try:
            if action == "add":
                stored, n, total = library.add_to_collection(runtime, name or "", ids)
                note = (f"Added {n} paper{'s' if n != 1 else ''} to **{inline(stored, 'chat')}** "
                        f"({total} in it now).")
            else:
                stored, n, total = library.remove_from_collection(runtime, name or "", ids)
                note = (f"Removed {n} paper{'s' if n != 1 else ''} from **{inline(stored, 'chat')}** "
                        f"({total} left; the papers stay in the library).")
        except InputError as e:
            gr.Warning(str(e))
            return (render.notice_markdown(str(e)), *(gr.skip(),) * (1 + WIDGETS))
        log.info("collection %s %r: %d of %d papers", action, stored, n, len(ids))
        widgets = self.collection_widgets(chat_coll, lib_value, stored)
        lib_now = lib_value if self.remaining(lib_value) else None  # removing a collection's last paper ends it
        return (note, self.search(text, who, cat, y0, y1, lib_now), *widgets)

    def export_selection(self, rows: Any, lib_value: str | None, kind: str) -> Any:
        """The ticked papers (else the chosen collection) as a Markdown reading list or BibTeX."""
        ids = render.selected_ids(rows)
        runtime = self.ctx.runtime
        try:
            if ids:
                scope = f"{len(ids)} selected paper{'s' if len(ids) != 1 else ''}"
            elif lib_value:
                ids = sorted(runtime.collections().members(lib_value))
                scope = f"collection “{lib_value}”"
            else:
                raise InputError("tick papers in the table (or choose a collection above it) first")
        except InputError as e:
            gr.Warning(str(e))
            return gr.skip()
        by_id = {p.id: p for p in runtime.store.papers(ids)}
        papers = [by_id[i] for i in ids if i in by_id]
        if kind == "md":
            text = papers_markdown(papers, scope)
        else:
            text = bibtex([export_citation(p) for p in papers], scope=scope)
        path = services.write_atomic(services.export_path(self.ctx.settings.home, f".{kind}"), text)
        log.info("exported %d papers (%s) to %s", len(papers), scope, path)
        return self.ctx.download(path)


def ask_these(rows: Any, lib_value: str | None) -> tuple[Any, ...]:
    """Switch to the chat, scoped to the ticked papers (else to the collection chosen above the table)."""
    ids = render.selected_ids(rows)
    if ids:
        titles = {str(r[-1]): str(r[1]) for r in rows}
        return (gr.Tabs(selected="chat"), *CLEARED_FILTERS, ids,
                render.scope_markdown([titles.get(i, i) for i in ids]))
    if lib_value:
        return (gr.Tabs(selected="chat"), None, "", "", "", lib_value, [], "")
    gr.Warning("Tick papers in the table (or choose a collection above it) first.")
    return (gr.skip(),) * (2 + len(CLEARED_FILTERS) + 1)


# ---- wiring ------------------------------------------------------------------------------------------
def wire(app: gr.Blocks, lib: LibraryTab, chat: ChatTab, tabs: gr.Tabs, scope_ids: gr.State,
         handlers: CollectionHandlers) -> None:
    """The collection events, in the app's order: refresh on load, add, remove, ask about, export."""
    acts = lib.actions
    coll_outputs = [chat.collection, lib.collection, acts.name, lib.coll_list]
    app.load(lambda: handlers.collection_widgets(None, None, None), None, coll_outputs, show_progress="hidden")

    change_io: dict[str, Any] = {
        "inputs": [lib.table, acts.name, chat.collection, *lib.search_inputs],
        "outputs": [acts.status, lib.table, *coll_outputs], "show_progress": "minimal",
        "concurrency_limit": 1, "concurrency_id": "collections"}
    acts.add_btn.click(lambda *a: handlers.change_collection("add", *a), **change_io)
    acts.remove_btn.click(lambda *a: handlers.change_collection("remove", *a), **change_io)

    acts.ask_these_btn.click(ask_these, [lib.table, lib.collection],
                             [tabs, *chat.filter_controls, scope_ids, chat.scope_md], show_progress="hidden")
    acts.md_btn.click(lambda r, c: handlers.export_selection(r, c, "md"), [lib.table, lib.collection],
                      [acts.download])
    acts.bib_btn.click(lambda r, c: handlers.export_selection(r, c, "bib"), [lib.table, lib.collection],
                       [acts.download])
