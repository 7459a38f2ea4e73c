"""Why these papers in the browser: the collapsed block under an answer, and a card's Exclude link steering the
next answer (Debian's chromium via Playwright, the app on 127.0.0.1 over the sample corpus)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.servers import free_port
from tests.test_ui_browser import CHROMIUM, ask, debian_chromium

pytestmark = pytest.mark.browser
QUESTION = "Which papers study reward hacking in reinforcement learning from human feedback?"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[str]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium) first.")
    from rag.config import Settings
    from rag.runtime import Runtime
    from ui.app import SAMPLE_DIR, build_app, launch
    from ui.services import ensure_sample

    settings = Settings(home=tmp_path_factory.mktemp("why-ui-home"), ui={"stream_delay_ms": 0})
    runtime = Runtime(settings, _embedder=embedder)
    ensure_sample(runtime, SAMPLE_DIR)
    app = build_app(runtime, settings)
    launch(app, settings, block=False, server_port=free_port())
    try:
        yield app.local_url
    finally:
        app.close()
        runtime.close()


def test_a_cards_exclude_link_steers_the_next_answer(url: str) -> None:
    for browser in debian_chromium():
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.set_default_timeout(60_000)
        page.goto(url)
        page.wait_for_selector("#pc-question textarea")
        first = ask(page, QUESTION)
        why = first.locator("details.pc-why-papers")
        assert why.count() == 1 and not why.get_attribute("open")
        why.locator("summary").click()
        assert "matches" in why.inner_text() and "not cited:" in why.inner_text()
        card = page.locator("#pc-sources details.pc-card").first
        title = card.locator(".pc-title").inner_text()
        card.locator("summary").click()
        card.locator("a.pc-steer-link", has_text="Exclude").click()
        page.locator('#pc-chat [data-testid="bot"]').nth(1).get_by_text("excluded").wait_for()
        second = ask(page, QUESTION, answers_before=2)
        assert "1 excluded" in second.inner_text()
        page.locator("#pc-sources .pc-sources-head").wait_for()
        titles = page.locator("#pc-sources details.pc-card .pc-title").all_inner_texts()
        assert titles and title not in titles
