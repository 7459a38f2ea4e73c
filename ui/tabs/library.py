"""The Library tab: corpus stats, search over the papers, the table (with the collection actions under it) and
adding a file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from rag.errors import InputError, PaperchatError
from rag.index.paper_query import PaperQuery
from ui import render, services
from ui.tabs import collections
from ui.tabs.chat import ChatTab
from ui.tabs.context import AppContext

FORMATS = ["auto", "listing", "arxiv-jsonl", "arxiv-atom", "bibtex", "csv", "json", "jsonl"]


@dataclass
class LibraryTab:
    """The Library tab's components that events read or write."""

    stats: gr.Markdown
    text: gr.Textbox
    author: gr.Textbox
    category: gr.Dropdown
    collection: gr.Dropdown
    year_from: gr.Textbox
    year_to: gr.Textbox
    search_btn: gr.Button
    coll_list: gr.Markdown
    table: gr.Dataframe
    actions: collections.CollectionActions
    upload: gr.File
    fmt: gr.Dropdown
    full_text: gr.Checkbox
    ingest_btn: gr.Button
    ingest_out: gr.Markdown

    @property
    def search_inputs(self) -> list[Any]:
        """In the order of ``LibraryHandlers.search``'s arguments."""
        return [self.text, self.author, self.category, self.year_from, self.year_to, self.collection]


def build(ctx: AppContext, cats: list[str], counts: dict[str, int]) -> LibraryTab:
    """The tab's components (inside ``gr.Tab("Library")``)."""
    stats = gr.Markdown(render.stats_markdown(services.corpus_stats(ctx.runtime)), elem_id="pc-stats")
    with gr.Row(equal_height=False, elem_id="pc-lib-controls"):
        text = gr.Textbox(label="Search", placeholder="words in title or abstract", scale=3,
                          elem_id="pc-lib-text")
        author = gr.Textbox(label="Author", scale=2, elem_id="pc-lib-author")
        category = gr.Dropdown(cats, value=None, label="Category", allow_custom_value=True, scale=2,
                               elem_id="pc-lib-category")
        collection = gr.Dropdown(render.collection_choices(counts), value=None, label="Collection", scale=2,
                                 elem_id="pc-lib-collection")
        year_from = gr.Textbox(label="Year from", min_width=90, elem_id="pc-lib-from")
        year_to = gr.Textbox(label="Year to", min_width=90, elem_id="pc-lib-to")
        search_btn = gr.Button("Search", variant="primary", min_width=90, scale=0, elem_id="pc-lib-search")
    coll_list = gr.Markdown(render.collections_markdown(counts), elem_id="pc-collections")
    # Ticking rows selects papers; every other column is read-only.
    table = gr.Dataframe(ctx.library_rows(PaperQuery()), headers=render.LIBRARY_HEADERS,
                         datatype=render.LIBRARY_TYPES, interactive=True,
                         static_columns=list(range(1, len(render.LIBRARY_HEADERS))), wrap=True,
                         type="array", max_height=520, elem_id="pc-library",
                         column_widths=["7%", "29%", "18%", "16%", "6%", "12%", "12%"])
    actions = collections.build(counts)
    with gr.Accordion("Add papers", open=True):
        gr.Markdown("Upload a file in any supported format: listing (.txt), arXiv JSONL or Atom, "
                    f"BibTeX, CSV, JSON, JSONL or a PDF — up to {ctx.settings.limits.upload_mb:g} MB. "
                    "Records that cannot be read are listed; the rest are added.")
        with gr.Row(equal_height=False):
            upload = gr.File(label="File", file_types=list(services.UPLOAD_SUFFIXES), type="filepath",
                             elem_id="pc-upload", scale=3, height=150)
            with gr.Column(scale=1, min_width=160):
                fmt = gr.Dropdown(FORMATS, value="auto", label="Format", elem_id="pc-format")
                full_text = gr.Checkbox(ctx.settings.ingest.full_text, label="With full text",
                                        info="a PDF's body too, cited to the page", elem_id="pc-full-text")
                ingest_btn = gr.Button("Add to library", variant="primary", elem_id="pc-ingest")
        ingest_out = gr.Markdown(elem_id="pc-ingest-report")
    return LibraryTab(stats, text, author, category, collection, year_from, year_to, search_btn, coll_list, table,
                      actions, upload, fmt, full_text, ingest_btn, ingest_out)


# ---- handlers ----------------------------------------------------------------------------------------
class LibraryHandlers:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def search(self, text: str, who: str, cat: str | None, y0: Any, y1: Any, coll: str | None) -> Any:
        """The table's rows for the search controls (a bad year is a warning, the table stays)."""
        try:
            q = services.filters_from_controls(cat, who, y0, y1) or PaperQuery()
            q.text = (text or "").strip() or None
            q.collection = (coll or "").strip() or None
            return self.ctx.library_rows(q)
        except InputError as e:
            gr.Warning(str(e))
            return gr.skip()

    def add_file(self, path: str | None, fmt_: str, full_text: bool = False,
                 progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:
        """Ingest an uploaded file (a PDF's body too with ``full_text``): (report, table, stats, chat category,
        library category, header, upload)."""
        if not path:
            gr.Warning("Choose a file first.")
            return (gr.skip(),) * 7
        ctx, settings = self.ctx, self.ctx.settings
        src = Path(path)
        name = src.name
        try:
            stored = services.accept_upload(src, settings.home / "uploads", settings.limits.upload_mb, name)
        except PaperchatError as e:
            return (render.notice_markdown(str(e)), *(gr.skip(),) * 5, None)
        finally:  # the upload now lives under PAPERCHAT_HOME; drop Gradio's served copy
            src.unlink(missing_ok=True)
        report = services.ingest_upload(ctx.runtime, stored, None if fmt_ == "auto" else fmt_,
                                        lambda f, m: progress(f, desc=m), display_name=name,
                                        full_text=bool(full_text))
        choices = services.categories(ctx.runtime)
        rows = ctx.library_rows(PaperQuery())
        return (render.ingest_report_markdown(name, report), rows,
                render.stats_markdown(services.corpus_stats(ctx.runtime)), gr.update(choices=choices),
                gr.update(choices=choices), ctx.header(), None)


# ---- wiring ------------------------------------------------------------------------------------------
def wire_search(tab: LibraryTab, handlers: LibraryHandlers) -> None:
    # One bound method for the three events: Gradio's default concurrency group is per function object.
    search, inputs = handlers.search, tab.search_inputs
    tab.search_btn.click(search, inputs, [tab.table], show_progress="minimal")
    tab.text.submit(search, inputs, [tab.table], show_progress="minimal")
    tab.collection.input(search, inputs, [tab.table], show_progress="minimal")


def wire_ingest(tab: LibraryTab, handlers: LibraryHandlers, chat: ChatTab, head: gr.Markdown) -> None:
    tab.ingest_btn.click(handlers.add_file, [tab.upload, tab.fmt, tab.full_text],
                         [tab.ingest_out, tab.table, tab.stats, chat.category, tab.category, head, tab.upload],
                         concurrency_limit=1, concurrency_id="ingest")
