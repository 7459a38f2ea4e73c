"""The Gradio app: ``build_app`` puts the tabs (``ui.tabs``) together, ``launch``/``serve`` run it.

``launch_kwargs``/``queue_kwargs`` hold every launch default that matters for safety. Each tab's components, events
and handlers are in its own module under ``ui.tabs``; rendering is ``ui.render``/``ui.export``, behaviour is
``ui.services``."""

from __future__ import annotations

import logging
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from rag.config import Settings
from rag.errors import ConfigError
from rag.qa.chain import AnswerChain
from rag.resources import sample_dir
from rag.runtime import Runtime
from ui import library, render, services
from ui.assets import CSS, PAGE_JS
from ui.logins import login_check
from ui.services import is_loopback
from ui.tabs import chat as chat_tab
from ui.tabs import collections as collections_tab
from ui.tabs import conversations as conversations_tab
from ui.tabs import library as library_tab
from ui.tabs.context import AppContext
from ui.tabs.session import Session
from ui.upload_limit import UploadCount

log = logging.getLogger(__name__)

SAMPLE_DIR = sample_dir()  # bundled with the package: ingested by `serve` into an empty store


def queue_kwargs(settings: Settings) -> dict[str, Any]:
    """Queue limits: answers computed at once, waiting requests, no direct API calls around the queue."""
    return {"default_concurrency_limit": settings.ui.concurrency, "max_size": settings.ui.queue_size,
            "api_open": False}


def launch_kwargs(settings: Settings) -> dict[str, Any]:
    """The safe launch defaults, in one place: no share link, loopback bind unless configured, auth from
    config (``ui.logins``), upload size and count limits, no tracebacks to the browser, nothing of
    ``$PAPERCHAT_HOME`` served."""
    ui = settings.ui
    return {
        "share": False, "server_name": ui.host, "server_port": ui.port, "auth": login_check(ui),
        "max_file_size": int(settings.limits.upload_mb * 1024 * 1024), "show_error": False,
        "allowed_paths": [], "blocked_paths": [str(settings.home.resolve())], "ssr_mode": False,
        "mcp_server": False, "pwa": False, "enable_monitoring": False, "strict_cors": True,
        "footer_links": ["settings"], "inbrowser": False,
        "app_kwargs": {"middleware": [Middleware(UploadCount, max_files=settings.limits.upload_files)]},
    }


def _theme() -> gr.themes.Base:
    # System fonts only: the default theme fetches Google Fonts, which an offline machine cannot reach.
    theme = gr.themes.Soft(primary_hue="indigo", secondary_hue="amber", neutral_hue="slate",
                           font=["ui-sans-serif", "system-ui", "Segoe UI", "Roboto", "sans-serif"],
                           font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "monospace"])
    # Contrast (WCAG AA, 4.5:1, checked by axe in tests/test_ui_a11y_browser.py): Soft's indigo-500 labels on
    # indigo-100, white on indigo-500 and slate-400 "subdued" text all fall short; one shade darker passes.
    return theme.set(
        color_accent="*primary_600", block_label_text_color="*primary_700", block_title_text_color="*primary_700",
        button_primary_background_fill="*primary_600", button_primary_background_fill_hover="*primary_700",
        button_primary_border_color="*primary_600", checkbox_label_background_fill_selected="*primary_600",
        body_text_color_subdued="*neutral_600", body_text_color_subdued_dark="*neutral_300")


def build_app(runtime: Runtime, settings: Settings | None = None, chain: AnswerChain | None = None) -> gr.Blocks:
    """The chat and library tabs over ``runtime``'s store (answering with ``chain``, made here when not given)."""
    settings = settings or runtime.settings
    chain = chain or AnswerChain(runtime, settings)
    cats = services.categories(runtime)
    examples = services.example_questions(services.example_papers(runtime),
                                          category_counts=services.category_counts(runtime))
    counts = library.collection_counts(runtime)

    with gr.Blocks(title="paperchat", analytics_enabled=False, fill_width=True,
                   delete_cache=(3600, 3600)) as app:
        ctx = AppContext(runtime, settings, chain, app)
        session = gr.State(Session())
        head = gr.Markdown(ctx.header(), elem_id="pc-header")
        scope_ids = gr.State([])  # the papers "Ask about these papers" scoped the chat to
        with gr.Sidebar(label="Conversations", open=False, elem_id="pc-sidebar", width=300):
            bar = conversations_tab.build()
        with gr.Tabs() as tabs:
            with gr.Tab("Chat", id="chat"):
                chat = chat_tab.build(ctx, cats, render.collection_choices(counts), examples)
            with gr.Tab("Library", id="library"):
                lib = library_tab.build(ctx, cats, counts)

        # Gradio numbers events in the order they are registered: this order is the app's.
        asked = chat_tab.wire(chat, chat_tab.ChatHandlers(ctx), session, scope_ids)
        lib_handlers = library_tab.LibraryHandlers(ctx)
        library_tab.wire_search(lib, lib_handlers)
        collections_tab.wire(app, lib, chat, tabs, scope_ids,
                             collections_tab.CollectionHandlers(ctx, lib_handlers.search))
        library_tab.wire_ingest(lib, lib_handlers, chat, head)
        conversations_tab.wire(app, bar, chat, conversations_tab.ConversationHandlers(ctx), session, scope_ids, asked)
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
    return UploadCount(BodyLimit(api, settings.api.max_body_kb * 1024, prefix="/v1/"), settings.limits.upload_files)


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
    if api:  # before anything loads: the API's keys first, then the app's login (both are served)
        from ui.api import check_bind

        check_bind(settings.ui.host, settings)
    check_open_bind(settings.ui.host, launch_kwargs(settings)["auth"], settings)
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
