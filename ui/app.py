"""The Gradio app: wiring only. Rendering is ``ui.render``/``ui.export``, behaviour is ``ui.services``;
``launch_kwargs``/``queue_kwargs`` hold every launch default that matters for safety."""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr

from rag.answer import Answer
from rag.config import Settings
from rag.errors import ConfigError, EmptyLibrary, InputError, PaperchatError
from rag.index.paper_query import PaperQuery, find_papers
from rag.limits import check_question
from rag.qa.chain import AnswerChain, resolve_mode
from rag.resources import sample_dir
from rag.runtime import Runtime
from ui import library, render, services
from ui.assets import CSS, LATEX_DELIMITERS, PAGE_JS
from ui.export import as_citation as export_citation
from ui.export import bibtex, cited_papers, conversation_markdown, conversation_scope, papers_markdown
from ui.safe import inline
from ui.services import is_loopback

log = logging.getLogger(__name__)

SAMPLE_DIR = sample_dir()  # bundled with the package: ingested by `serve` into an empty store
LIBRARY_LIMIT = 500


def queue_kwargs(settings: Settings) -> dict[str, Any]:
    """Queue limits: answers computed at once, waiting requests, no direct API calls around the queue."""
    return {"default_concurrency_limit": settings.ui.concurrency, "max_size": settings.ui.queue_size,
            "api_open": False}


def launch_kwargs(settings: Settings) -> dict[str, Any]:
    """The safe launch defaults, in one place: no share link, loopback bind unless configured, auth from
    config, upload size limit, no tracebacks to the browser, nothing of ``$PAPERCHAT_HOME`` served."""
    ui = settings.ui
    auth = None
    if ui.username and ui.password:
        auth = (ui.username, ui.password.get_secret_value())
    elif ui.username or ui.password:
        raise InputError("set both PAPERCHAT_UI__USERNAME and PAPERCHAT_UI__PASSWORD for login, or neither")
    return {
        "share": False, "server_name": ui.host, "server_port": ui.port, "auth": auth,
        "max_file_size": int(settings.limits.upload_mb * 1024 * 1024), "show_error": False,
        "allowed_paths": [], "blocked_paths": [str(settings.home.resolve())], "ssr_mode": False,
        "mcp_server": False, "pwa": False, "enable_monitoring": False, "strict_cors": True,
        "footer_links": ["settings"], "inbrowser": False,
    }


def _theme() -> gr.themes.Base:
    # System fonts only: the default theme fetches Google Fonts, which an offline machine cannot reach.
    return gr.themes.Soft(primary_hue="indigo", secondary_hue="amber", neutral_hue="slate",
                          font=["ui-sans-serif", "system-ui", "Segoe UI", "Roboto", "sans-serif"],
                          font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "monospace"])


def _new_session() -> dict[str, Any]:
    return {"answers": [], "msg_turn": [], "stamps": [], "shown": None}


def _served_copy(app: gr.Blocks, path: Path) -> str:
    """A copy of an export in Gradio's own cache, the one place downloads are served from."""
    folder = Path(tempfile.mkdtemp(prefix="paperchat-", dir=_cache_dir(app)))
    dest = folder / path.name
    shutil.copyfile(path, dest)
    return str(dest)


def _cache_dir(app: gr.Blocks) -> str:
    cache = Path(getattr(app, "GRADIO_CACHE", tempfile.gettempdir()))
    cache.mkdir(parents=True, exist_ok=True)
    return str(cache)


def build_app(runtime: Runtime, settings: Settings | None = None, chain: AnswerChain | None = None) -> gr.Blocks:
    """The chat and library tabs over ``runtime``'s store (answering with ``chain``, made here when not given)."""
    settings = settings or runtime.settings
    chain = chain or AnswerChain(runtime, settings)
    feedback = services.FeedbackLog(settings.home / "feedback.jsonl")
    modes = ["extractive"] + ([] if settings.offline else ["llm"])
    default_mode = resolve_mode(settings, None)
    cats = services.categories(runtime)
    examples = services.example_questions(services.example_papers(runtime),
                                          category_counts=services.category_counts(runtime))
    delay = settings.ui.stream_delay_ms / 1000
    counts = library.collection_counts(runtime)

    def library_rows(q: PaperQuery) -> list[list[Any]]:
        """The Library table for a query (its collection applied), each row with the collections it is in."""
        papers = find_papers(runtime.store, library.resolve(runtime, q) or q, LIBRARY_LIMIT)
        return render.library_rows(papers, runtime.collections().of_papers([p.id for p in papers]))

    def header() -> str:
        n = services.paper_count(runtime)
        if not n:  # questions get the same message, as a notice in the chat
            return f"# paperchat\n{EmptyLibrary()}, or add a file in the **Library** tab."
        return (f"# paperchat\nAsk questions about **{n} papers**; answers quote the abstracts and cite them "
                f"— open a card on the right to read the evidence.")

    with gr.Blocks(title="paperchat", analytics_enabled=False, fill_width=True,
                   delete_cache=(3600, 3600)) as app:
        session = gr.State(_new_session())
        head = gr.Markdown(header(), elem_id="pc-header")
        scope_ids = gr.State([])  # the papers "Ask about these papers" scoped the chat to
        with gr.Tabs() as tabs:
            with gr.Tab("Chat", id="chat"):
                with gr.Row(equal_height=True, elem_id="pc-controls"):
                    category = gr.Dropdown(cats, value=None, label="Category", allow_custom_value=True,
                                           elem_id="pc-category", scale=2, min_width=170)
                    collection = gr.Dropdown(render.collection_choices(counts), value=None, label="Collection",
                                             elem_id="pc-collection", scale=2, min_width=160)
                    author = gr.Textbox(label="Author", placeholder="name or surname", elem_id="pc-author", scale=2,
                                        min_width=140)
                    year_from = gr.Textbox(label="Year from", placeholder="e.g. 2019", elem_id="pc-year-from",
                                           scale=1, min_width=90)
                    year_to = gr.Textbox(label="Year to", placeholder="e.g. 2024", elem_id="pc-year-to", scale=1,
                                         min_width=90)
                    k = gr.Slider(1, 20, value=settings.retrieval.k, step=1, label="Papers (k)", elem_id="pc-k",
                                  scale=2, min_width=150)
                    mode = gr.Radio(modes, value=default_mode, label="Answer mode", elem_id="pc-mode", scale=2,
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
            with gr.Tab("Library", id="library"):
                stats = gr.Markdown(render.stats_markdown(services.corpus_stats(runtime)), elem_id="pc-stats")
                with gr.Row(equal_height=False, elem_id="pc-lib-controls"):
                    lib_text = gr.Textbox(label="Search", placeholder="words in title or abstract", scale=3,
                                          elem_id="pc-lib-text")
                    lib_author = gr.Textbox(label="Author", scale=2, elem_id="pc-lib-author")
                    lib_cat = gr.Dropdown(cats, value=None, label="Category", allow_custom_value=True, scale=2,
                                          elem_id="pc-lib-category")
                    lib_coll = gr.Dropdown(render.collection_choices(counts), value=None, label="Collection", scale=2,
                                           elem_id="pc-lib-collection")
                    lib_from = gr.Textbox(label="Year from", min_width=90, elem_id="pc-lib-from")
                    lib_to = gr.Textbox(label="Year to", min_width=90, elem_id="pc-lib-to")
                    lib_btn = gr.Button("Search", variant="primary", min_width=90, scale=0, elem_id="pc-lib-search")
                coll_list = gr.Markdown(render.collections_markdown(counts), elem_id="pc-collections")
                # Ticking rows selects papers; every other column is read-only.
                table = gr.Dataframe(library_rows(PaperQuery()), headers=render.LIBRARY_HEADERS,
                                     datatype=render.LIBRARY_TYPES, interactive=True,
                                     static_columns=list(range(1, len(render.LIBRARY_HEADERS))), wrap=True,
                                     type="array", max_height=520, elem_id="pc-library",
                                     column_widths=["7%", "29%", "18%", "16%", "6%", "12%", "12%"])
                with gr.Row(equal_height=True, elem_id="pc-coll-actions"):
                    coll_name = gr.Dropdown(list(counts), value=None, allow_custom_value=True, label="Collection name",
                                            info="pick one or type a new name", elem_id="pc-coll-name", scale=3,
                                            min_width=200)
                    add_btn = gr.Button("Add to collection", elem_id="pc-coll-add", scale=1, min_width=140)
                    remove_btn = gr.Button("Remove from collection", elem_id="pc-coll-remove", scale=1, min_width=160)
                    ask_these_btn = gr.Button("Ask about these papers", variant="primary", elem_id="pc-ask-these",
                                              scale=1, min_width=170)
                    lib_md_btn = gr.Button("Export Markdown", size="sm", elem_id="pc-lib-export-md", scale=0,
                                           min_width=130)
                    lib_bib_btn = gr.Button("Export .bib", size="sm", elem_id="pc-lib-export-bib", scale=0,
                                            min_width=100)
                coll_status = gr.Markdown("Tick papers in the table to add them to a collection, ask about them or "
                                          "export them (with none ticked, the chosen collection is used).",
                                          elem_id="pc-coll-status")
                lib_download = gr.File(label="Download", visible=False, interactive=False, elem_id="pc-lib-download")
                with gr.Accordion("Add papers", open=True):
                    gr.Markdown("Upload a file in any supported format: listing (.txt), arXiv JSONL or Atom, "
                                f"BibTeX, CSV, JSON or JSONL — up to {settings.limits.upload_mb:g} MB. "
                                "Records that cannot be read are listed; the rest are added.")
                    with gr.Row(equal_height=False):
                        upload = gr.File(label="File", file_types=list(services.UPLOAD_SUFFIXES), type="filepath",
                                         elem_id="pc-upload", scale=3, height=150)
                        with gr.Column(scale=1, min_width=160):
                            fmt = gr.Dropdown(["auto", "listing", "arxiv-jsonl", "arxiv-atom", "bibtex", "csv",
                                               "json", "jsonl"], value="auto", label="Format", elem_id="pc-format")
                            ingest_btn = gr.Button("Add to library", variant="primary", elem_id="pc-ingest")
                    ingest_out = gr.Markdown(elem_id="pc-ingest-report")

        filter_controls = [category, author, year_from, year_to, collection]
        cleared_filters = (None, "", "", "", None)

        # ---- chat -----------------------------------------------------------------------------
        def ask(text: str, chat: list[dict[str, Any]], state: dict[str, Any], k_: float, mode_: str,
                cat: str | None, who: str | None, y0: Any, y1: Any, coll: str | None = None,
                within: list[str] | None = None) -> Iterator[tuple[Any, ...]]:
            skips = (gr.skip(),) * len(filter_controls)
            keep = (gr.skip(), *skips)
            text = (text or "").strip()
            if not text:
                yield chat, state, gr.skip(), *keep
                return
            chat = list(chat or []) + [{"role": "user", "content": inline(text, "chat")}]
            state["msg_turn"].append(None)
            streamed = ""
            try:
                text = check_question(text, settings.limits)
                state["stamps"] = services.check_rate(state["stamps"], settings.limits.requests_per_minute)
                filters = services.filters_from_controls(cat, who, y0, y1) or PaperQuery()
                filters.collection = (coll or "").strip() or None
                filters.paper_ids = list(within or [])
                turn = len(state["answers"])
                chat.append({"role": "assistant", "content": render.streaming_markdown("")})
                state["msg_turn"].append(None)
                yield chat, state, gr.skip(), "", *skips
                answer = None
                for item in chain.stream(text, history=state["answers"], k=int(k_),
                                         filters=None if filters.is_empty() else filters,
                                         mode=chain.resolve_mode(mode_)):
                    if isinstance(item, Answer):
                        answer = item
                        continue
                    streamed += item
                    chat[-1] = {"role": "assistant", "content": render.streaming_markdown(streamed)}
                    yield chat, state, gr.skip(), *keep
                    if delay and mode_ == "extractive":
                        time.sleep(delay)
                assert answer is not None
                state["answers"].append(answer)
                state["msg_turn"][-1] = turn
                state["shown"] = turn
                chat[-1] = {"role": "assistant", "content": render.answer_markdown(answer, turn)}
                yield (chat, state, render.sources_html(answer, turn), gr.skip(),
                       *services.controls_from_filters(answer.filters), answer.filters.get("collection"))
            except Exception as e:  # shown in the chat; the app goes on
                if isinstance(e, PaperchatError):
                    log.info("question refused: %s", e)
                    note = str(e)
                else:  # a bug or an outage: the details go to the log, not to the browser
                    log.exception("answering %r failed", text[:200])
                    note = "something went wrong while answering; the server log has the details"
                content = render.notice_markdown(note)
                if streamed.strip():  # what the reader already saw stays, marked as cut off and unchecked
                    content = (inline(streamed.rstrip(), "chat") + " \u2026\n\n"
                               + render.notice_markdown(f"answer incomplete and its citations unchecked: {note}"))
                message = {"role": "assistant", "content": content}
                if chat[-1]["role"] == "assistant":
                    chat[-1] = message
                else:
                    chat.append(message)
                    state["msg_turn"].append(None)
                yield chat, state, gr.skip(), text, *skips

        ask_io: dict[str, Any] = {"inputs": [question, chatbot, session, k, mode, *filter_controls, scope_ids],
                  "outputs": [chatbot, session, sources, question, *filter_controls],
                  "show_progress": "minimal"}
        question.submit(ask, api_name="ask", **ask_io)  # a stable API name for scripted clients
        ask_btn.click(ask, api_visibility="undocumented", **ask_io)
        def pick_example(evt: gr.SelectData) -> str:
            return evt.value.get("text", "") if isinstance(evt.value, dict) else str(evt.value or "")

        chatbot.example_select(pick_example, None, question, show_progress="hidden", queue=False).then(
            ask, api_visibility="undocumented", **ask_io)

        def new_conversation(state: dict[str, Any]) -> tuple[Any, ...]:
            fresh = _new_session()
            fresh["stamps"] = state.get("stamps", [])
            return ([], fresh, render.sources_html(None), gr.update(value=None, visible=False), *cleared_filters,
                    [], "")

        reset_io: dict[str, Any] = {"inputs": [session],
                                    "outputs": [chatbot, session, sources, download, *filter_controls, scope_ids,
                                                scope_md]}
        new_btn.click(new_conversation, api_name="new_conversation", **reset_io)
        chatbot.clear(new_conversation, **reset_io)
        clear_btn.click(lambda: (*cleared_filters, [], ""), None, [*filter_controls, scope_ids, scope_md], queue=False)

        def show_turn(state: dict[str, Any], evt: gr.SelectData) -> Any:
            idx = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            turns = state["msg_turn"]
            turn = turns[idx] if isinstance(idx, int) and 0 <= idx < len(turns) else None
            if turn is None or turn == state.get("shown"):
                return gr.skip(), state
            state["shown"] = turn
            return render.sources_html(state["answers"][turn], turn), state

        chatbot.select(show_turn, [session], [sources, session], show_progress="hidden")

        def vote(state: dict[str, Any], evt: gr.LikeData) -> None:
            idx = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            turns = state["msg_turn"]
            turn = turns[idx] if isinstance(idx, int) and 0 <= idx < len(turns) else None
            if turn is None or not isinstance(evt.liked, bool):
                return
            feedback.record(state["answers"][turn], evt.liked, history=state["answers"][:turn])
            gr.Info("Thanks: feedback saved.")

        chatbot.like(vote, [session], None, show_progress="hidden")

        def export(state: dict[str, Any], kind: str) -> Any:
            answers = state["answers"]
            if not answers:
                gr.Warning("Nothing to export yet: ask a question first.")
                return gr.skip()
            if kind == "md":
                path = services.write_atomic(services.export_path(settings.home, ".md"),
                                             conversation_markdown(answers))
            else:
                papers = cited_papers(answers)
                if not papers:
                    gr.Warning("No paper has been cited yet.")
                    return gr.skip()
                path = services.write_atomic(services.export_path(settings.home, ".bib"),
                                             bibtex(papers, scope=conversation_scope(answers)))
            log.info("exported %s", path)
            return gr.update(value=_served_copy(app, path), visible=True)

        md_btn.click(lambda s: export(s, "md"), [session], [download])
        bib_btn.click(lambda s: export(s, "bib"), [session], [download])

        # ---- library --------------------------------------------------------------------------
        def search(text: str, who: str, cat: str | None, y0: Any, y1: Any, coll: str | None) -> Any:
            try:
                q = services.filters_from_controls(cat, who, y0, y1) or PaperQuery()
                q.text = (text or "").strip() or None
                q.collection = (coll or "").strip() or None
                return library_rows(q)
            except InputError as e:
                gr.Warning(str(e))
                return gr.skip()

        lib_inputs = [lib_text, lib_author, lib_cat, lib_from, lib_to, lib_coll]
        lib_btn.click(search, lib_inputs, [table], show_progress="minimal")
        lib_text.submit(search, lib_inputs, [table], show_progress="minimal")
        lib_coll.input(search, lib_inputs, [table], show_progress="minimal")

        # ---- collections ----------------------------------------------------------------------
        def collection_widgets(chat_coll: str | None, lib_value: str | None, name: str | None) -> tuple[Any, ...]:
            """The collection pickers, the name field and the list, refreshed (a value whose collection is gone
            is cleared)."""
            now = library.collection_counts(runtime)
            choices = render.collection_choices(now)
            return (gr.update(choices=choices, value=chat_coll if chat_coll in now else None),
                    gr.update(choices=choices, value=lib_value if lib_value in now else None),
                    gr.update(choices=list(now), value=name), render.collections_markdown(now))

        def remaining(name: str | None) -> bool:
            return bool(name) and name in library.collection_counts(runtime)

        coll_outputs = [collection, lib_coll, coll_name, coll_list]
        app.load(lambda: collection_widgets(None, None, None), None, coll_outputs, show_progress="hidden")

        def change_collection(action: str, rows: Any, name: str | None, chat_coll: str | None, text: str, who: str,
                              cat: str | None, y0: Any, y1: Any, lib_value: str | None) -> tuple[Any, ...]:
            ids = render.selected_ids(rows)
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
                return (render.notice_markdown(str(e)), *(gr.skip(),) * (1 + len(coll_outputs)))
            log.info("collection %s %r: %d of %d papers", action, stored, n, len(ids))
            widgets = collection_widgets(chat_coll, lib_value, stored)
            lib_now = lib_value if remaining(lib_value) else None  # removing a collection's last paper ends it
            return (note, search(text, who, cat, y0, y1, lib_now), *widgets)

        change_io: dict[str, Any] = {
            "inputs": [table, coll_name, collection, *lib_inputs],
            "outputs": [coll_status, table, *coll_outputs], "show_progress": "minimal",
            "concurrency_limit": 1, "concurrency_id": "collections"}
        add_btn.click(lambda *a: change_collection("add", *a), **change_io)
        remove_btn.click(lambda *a: change_collection("remove", *a), **change_io)

        def ask_these(rows: Any, lib_value: str | None) -> tuple[Any, ...]:
            """Switch to the chat, scoped to the ticked papers (else to the collection chosen above the table)."""
            ids = render.selected_ids(rows)
            if ids:
                titles = {str(r[-1]): str(r[1]) for r in rows}
                return (gr.Tabs(selected="chat"), *cleared_filters, ids,
                        render.scope_markdown([titles.get(i, i) for i in ids]))
            if lib_value:
                return (gr.Tabs(selected="chat"), None, "", "", "", lib_value, [], "")
            gr.Warning("Tick papers in the table (or choose a collection above it) first.")
            return (gr.skip(),) * (2 + len(filter_controls) + 1)

        ask_these_btn.click(ask_these, [table, lib_coll], [tabs, *filter_controls, scope_ids, scope_md],
                            show_progress="hidden")

        def export_selection(rows: Any, lib_value: str | None, kind: str) -> Any:
            """The ticked papers (else the chosen collection) as a Markdown reading list or BibTeX."""
            ids = render.selected_ids(rows)
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
            path = services.write_atomic(services.export_path(settings.home, f".{kind}"), text)
            log.info("exported %d papers (%s) to %s", len(papers), scope, path)
            return gr.update(value=_served_copy(app, path), visible=True)

        lib_md_btn.click(lambda r, c: export_selection(r, c, "md"), [table, lib_coll], [lib_download])
        lib_bib_btn.click(lambda r, c: export_selection(r, c, "bib"), [table, lib_coll], [lib_download])

        def add_file(path: str | None, fmt_: str, progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:
            if not path:
                gr.Warning("Choose a file first.")
                return (gr.skip(),) * 7
            src = Path(path)
            name = src.name
            try:
                stored = services.accept_upload(src, settings.home / "uploads", settings.limits.upload_mb, name)
            except PaperchatError as e:
                return (render.notice_markdown(str(e)), *(gr.skip(),) * 5, None)
            finally:  # the upload now lives under PAPERCHAT_HOME; drop Gradio's served copy
                src.unlink(missing_ok=True)
            report = services.ingest_upload(runtime, stored, None if fmt_ == "auto" else fmt_,
                                            lambda f, m: progress(f, desc=m), display_name=name)
            choices = services.categories(runtime)
            rows = library_rows(PaperQuery())
            return (render.ingest_report_markdown(name, report), rows,
                    render.stats_markdown(services.corpus_stats(runtime)), gr.update(choices=choices),
                    gr.update(choices=choices), header(), None)

        ingest_btn.click(add_file, [upload, fmt], [ingest_out, table, stats, category, lib_cat, head, upload],
                         concurrency_limit=1, concurrency_id="ingest")
    return app


def check_open_bind(host: str, auth: object, settings: Settings) -> None:
    """``ConfigError`` when the app would serve beyond loopback without a login, unless ``ui.allow_open``
    (``--allow-open``) says that is meant: anyone who can reach it could read, change and upload to the library."""
    if is_loopback(host) or auth:
        return
    if not settings.ui.allow_open:
        raise ConfigError(f"refusing to serve the app on {host} without a login: set PAPERCHAT_UI__USERNAME and "
                          "PAPERCHAT_UI__PASSWORD, bind to 127.0.0.1, or pass --allow-open (ui.allow_open) to let "
                          "anyone who can reach it use it")
    log.warning("serving on %s without a login (--allow-open): anyone who can reach it can use it", host)


def launch(app: gr.Blocks, settings: Settings, block: bool = True, **overrides: Any) -> gr.Blocks:
    """Queue and launch ``app`` with the safe defaults (``overrides`` for tests: e.g. ``server_port``)."""
    kwargs = launch_kwargs(settings) | overrides
    check_open_bind(str(kwargs["server_name"]), kwargs.get("auth"), settings)
    app.queue(**queue_kwargs(settings))
    app.launch(prevent_thread_lock=not block, quiet=True, theme=_theme(), css=CSS, js=PAGE_JS, **kwargs)
    return app


def mount_with_api(app: gr.Blocks, lib: library.Library, settings: Settings) -> Any:
    """The HTTP API (``ui.api``, under /v1) over ``lib`` with the Gradio app mounted at / in one ASGI app, with the
    same safe launch defaults as ``launch``: one process, so an embedded store (and, when the app was built with
    ``lib.chain``, one answer chain with its caches) serves both."""
    from ui.api import BodyLimit, create_app

    kw = launch_kwargs(settings)
    api = create_app(lib, settings)
    app.queue(**queue_kwargs(settings))
    gr.mount_gradio_app(api, app, path="/", server_name=kw["server_name"], server_port=kw["server_port"],
                        footer_links=kw["footer_links"], auth=kw["auth"], allowed_paths=kw["allowed_paths"],
                        blocked_paths=kw["blocked_paths"], show_error=False, max_file_size=kw["max_file_size"],
                        ssr_mode=False, enable_monitoring=False, pwa=False, mcp_server=False, theme=_theme(),
                        css=CSS, js=PAGE_JS)
    # The body limit covers the API's routes only: uploads to the app have their own (limits.upload_mb).
    return BodyLimit(api, settings.api.max_body_kb * 1024, prefix="/v1/")


def serve(settings: Settings, host: str | None = None, port: int | None = None, api: bool = False,
          allow_open: bool = False) -> int:
    """``paperchat serve``: ingest the sample corpus into an empty store, then serve until interrupted;
    ``api=True`` serves the HTTP API (``ui.api``) beside the app, in the same process; ``allow_open``: a bind beyond
    loopback without a login starts (with a warning) instead of refusing."""
    ui_overrides: dict[str, Any] = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    if allow_open:
        ui_overrides["allow_open"] = True
    if ui_overrides:
        settings = settings.with_overrides(ui=ui_overrides)
    check_open_bind(settings.ui.host, launch_kwargs(settings)["auth"], settings)  # before anything loads
    if api:
        from ui.api import check_bind

        check_bind(settings.ui.host, settings)
    runtime = Runtime(settings)
    try:
        report = services.ensure_sample(runtime, SAMPLE_DIR)
        if report is not None:
            log.warning("sample corpus: %s", report.summary())
        lib = library.Library.open(runtime, settings)
        app = build_app(runtime, settings, lib.chain)
        log.warning("paperchat on http://%s:%d (Ctrl-C stops it)", settings.ui.host, settings.ui.port)
        if api:
            import uvicorn

            log.warning("paperchat API on http://%s:%d/v1", settings.ui.host, settings.ui.port)
            uvicorn.run(mount_with_api(app, lib, settings), host=settings.ui.host, port=settings.ui.port,
                        log_level="warning", access_log=False)
        else:
            launch(app, settings, block=True)
    finally:
        runtime.close()
    return 0
