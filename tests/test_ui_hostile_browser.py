"""Hostile *model output* in the real browser: an llm-mode app whose (fake) model answers with script tags,
``javascript:`` links, ``<img onerror>``, SVG/iframe and Markdown images on outside hosts, while streaming and
once finished. Nothing may run, load or link out. Reuses the checks of tests/test_ui_browser.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.servers import free_port
from tests.test_ui_browser import ARTIFACTS, CHROMIUM, EVIL, ask, assert_inert, debian_chromium, shot

pytestmark = pytest.mark.browser

HOSTILE_REPLY = (
    "EPPO penalizes the increase in energy loss in the final layer [1]. "
    "<script>window.__pwned=1</script> Read [the details](javascript:window.__pwned=1) "
    '<a href="javascript:window.__pwned=1" onclick="window.__pwned=1">here</a> '
    '<img src=x onerror="window.__pwned=1;alert(1)"> ![tracker](http://evil.example/x.png) '
    '<iframe src="http://evil.example/frame"></iframe> <svg onload="window.__pwned=1"></svg> '
    "[click](http://evil.example/phish) <https://evil.example/auto> www.evil.example/w "
    '<details open ontoggle="window.__pwned=1">x</details> It keeps training stable [1].')


@pytest.fixture(scope="module")
def hostile_llm_app(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[dict[str, Any]]:
    """The app over the sample corpus in llm mode, answering through a fake model that writes HOSTILE_REPLY."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium) first.")
    from rag.config import Settings
    from rag.runtime import Runtime
    from tests.fakes.openai_server import FakeOpenAIServer
    from ui.app import SAMPLE_DIR, build_app, launch
    from ui.services import ensure_sample

    home = tmp_path_factory.mktemp("hostile-llm-home")
    with FakeOpenAIServer(model="stub-model", api_key="sk-test", default_reply=HOSTILE_REPLY,
                          chunk_delay=0.01) as llm:
        settings = Settings(home=home, llm={"base_url": llm.base_url, "api_key": "sk-test", "model": "stub-model"})
        runtime = Runtime(settings, _embedder=embedder)
        app = None
        try:
            ensure_sample(runtime, SAMPLE_DIR)
            app = build_app(runtime, settings)
            launch(app, settings, block=False, server_port=free_port())
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            yield {"url": app.local_url, "llm": llm}
        finally:
            if app is not None:
                app.close()
            runtime.close()


@pytest.fixture(scope="module")
def chromium(hostile_llm_app: dict[str, Any]) -> Iterator[Any]:
    yield from debian_chromium()


def test_hostile_model_output_renders_inert(chromium: Any, hostile_llm_app: dict[str, Any]) -> None:
    url = hostile_llm_app["url"]
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    try:
        pg = context.new_page()
        pg.set_default_timeout(30_000)
        pg.outside = []  # type: ignore[attr-defined]
        dialogs: list[str] = []
        pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

        def route(r: Any) -> None:
            if r.request.url.startswith(url.rstrip("/")):
                r.continue_()
            else:
                pg.outside.append(r.request.url)  # type: ignore[attr-defined]
                r.abort()

        pg.route("**/*", route)
        pg.goto(url)
        pg.wait_for_selector("#pc-question textarea")
        assert pg.locator("#pc-mode label:has-text('llm') input").is_checked()
        # Check while it streams too: the partial message is rendered from raw model text.
        pg.evaluate("""() => {
          window.__pcBad = [];
          new MutationObserver(() => {
            for (const el of document.querySelectorAll('.message-content *')) {
              if (['SCRIPT', 'IMG', 'IFRAME', 'SVG', 'svg'].includes(el.tagName) && !el.closest('.katex'))
                window.__pcBad.push(el.tagName);
              for (const a of el.attributes)
                if (a.name.startsWith('on') || /^\\s*javascript:/i.test(a.value) || a.value.includes('evil.example'))
                  window.__pcBad.push(el.tagName + ' ' + a.name);
            }
          }).observe(document.querySelector('#pc-chat'), {subtree: true, childList: true, attributes: true});
        }""")
        msg = ask(pg, "What does EPPO penalize?")
        text = msg.inner_text()
        assert "<script>window.__pwned=1</script>" in text  # shown as text
        assert "javascript:" in text and EVIL in text
        assert msg.locator("a.pc-cite").count() >= 1  # our own citation links still work
        hrefs = msg.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
        assert hrefs and all(h.startswith("#pc-card-") for h in hrefs), hrefs  # the only links are ours
        assert pg.evaluate("window.__pcBad") == []
        assert dialogs == []
        shot(pg, "chat-llm-hostile")
        assert_inert(pg)
        assert any("chat/completions" in r.path for r in hostile_llm_app["llm"].requests)
    finally:
        context.close()
