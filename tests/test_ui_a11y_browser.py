"""Accessibility of the real app in Debian's Chromium: axe-core (the axe.min.js bundled by axe-playwright-python) on
the chat, the conversations sidebar and the library with an answer shown; a keyboard-only session (ask, open a
citation card, export, resume a saved conversation); and a phone-width (390 px) viewport without horizontal
scrolling. One app per module over the sample corpus."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import test_ui_conversations_browser as conversations
from tests.test_ui_browser import ARTIFACTS, ask
from tests.test_ui_conversations_browser import App, open_page

pytestmark = pytest.mark.browser
served = conversations.served  # the app over its own home (stopped after the module), as the sidebar tests use it
browser = conversations.browser  # Debian's chromium

SEVERE = ("serious", "critical")
QUESTION = "What is procedural pretraining?"


@pytest.fixture(scope="module")
def app_url(served: App) -> str:
    """The app over the sample corpus, started once for the module (``served`` stops it)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return served.start()


@pytest.fixture
def page(browser: Any, app_url: str) -> Iterator[Any]:
    pg = open_page(browser, app_url)
    yield pg
    pg.context.close()


def severe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    from axe_playwright_python.sync_playwright import Axe

    return [v for v in Axe().run(page).response["violations"] if v["impact"] in SEVERE]


def describe(violations: list[dict[str, Any]]) -> str:
    return "\n".join(f"{v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {v['help']}: "
                     + "; ".join(n["html"][:120] for n in v["nodes"][:3]) for v in violations)


def test_axe_finds_nothing_serious_in_chat_sidebar_and_library(page: Any) -> None:
    ask(page, QUESTION)
    page.locator("#pc-sources details.pc-card summary").first.click()
    page.wait_for_function("document.querySelector('#pc-sources details.pc-card').open === true")
    assert page.locator("#pc-sources mark.pc-evidence").count() >= 1  # the card's custom HTML is in view
    found = {"chat": severe_violations(page)}

    toggle = page.locator('#pc-sidebar button[aria-label="Toggle Sidebar"]')
    assert toggle.get_attribute("aria-expanded") == "false"  # the toggle says the sidebar is closed…
    assert page.locator(f"#{toggle.get_attribute('aria-controls')}").locator("#pc-conversations").count() == 1
    toggle.click()
    page.wait_for_selector("#pc-sidebar.open")
    page.wait_for_selector('#pc-sidebar button[aria-label="Toggle Sidebar"][aria-expanded="true"]')  # …and open
    page.locator("#pc-conversations label").first.wait_for()
    found["sidebar"] = severe_violations(page)
    toggle.click()  # closed again: open, it covers the tabs
    page.wait_for_selector("#pc-sidebar:not(.open)")
    page.wait_for_selector('#pc-sidebar button[aria-label="Toggle Sidebar"][aria-expanded="false"]')

    page.click("button[role=tab]:has-text('Library')")
    page.wait_for_selector('#pc-library [data-testid="cell-0-1"]')
    page.wait_for_timeout(200)  # the page script names the table's checkboxes on the next frame
    found["library"] = severe_violations(page)
    assert all(not v for v in found.values()), "\n".join(f"{view}:\n{describe(v)}" for view, v in found.items())
    assert page.locator("#pc-library input[type=checkbox][aria-label^='Select: ']").count() >= 1


def focus(page: Any, selector: str, limit: int = 120, back: bool = False) -> None:
    """Press Tab (Shift+Tab with ``back``) until the focused element matches ``selector``; every element focused on
    the way must be on screen (the closed sidebar's controls, off the page's left edge, are not Tab stops)."""
    for _ in range(limit):
        at = page.evaluate("""s => { const a = document.activeElement; const r = a.getBoundingClientRect();
          return [a.matches(s), a === document.body || (r.right > 0 && r.left < innerWidth), a.outerHTML.slice(0, 120)];
        }""", selector)
        assert at[1], f"focus went to an element off screen: {at[2]}"
        if at[0]:
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"{selector} was not reached with {limit} presses of Tab: "
                         + page.evaluate("document.activeElement && document.activeElement.outerHTML.slice(0, 200)"))


def test_keyboard_only_ask_open_card_export_and_resume(page: Any) -> None:
    bots = page.locator('#pc-chat [data-testid="bot"]')
    focus(page, "#pc-question textarea")
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")  # asks
    bots.first.locator(".pc-meta").wait_for()

    focus(page, "#pc-chat a.pc-cite")  # the answer's first inline [n]
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('pc-card-0-1').open === true")
    focus(page, "#pc-card-0-1 > summary")  # a card's summary toggles it from the keyboard too
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('pc-card-0-1').open === false")
    page.keyboard.press("Space")
    page.wait_for_function("document.getElementById('pc-card-0-1').open === true")

    focus(page, "#pc-export-md", back=True)
    page.keyboard.press("Enter")
    page.locator("#pc-download a[download]").first.wait_for()
    focus(page, "#pc-download a[download]")
    with page.expect_download() as info:
        page.keyboard.press("Enter")
    saved = ARTIFACTS / "keyboard-export.md"
    info.value.save_as(saved)
    assert QUESTION in saved.read_text()

    focus(page, '#pc-sidebar button[aria-label="Toggle Sidebar"][aria-expanded="false"]', back=True)
    page.keyboard.press("Enter")
    page.wait_for_selector("#pc-sidebar.open")
    page.wait_for_selector('#pc-sidebar button[aria-label="Toggle Sidebar"][aria-expanded="true"]')
    page.wait_for_function("document.querySelector('#pc-sidebar').getBoundingClientRect().left >= 0")  # slid in
    focus(page, "#pc-conv-new")
    page.keyboard.press("Enter")  # a new chat: empty, the saved one listed and not chosen
    page.wait_for_function("document.querySelectorAll('#pc-chat [data-testid=\"bot\"]').length === 0")
    page.wait_for_function("document.querySelector('#pc-conversations input:checked') === null")
    focus(page, "#pc-conversations input[type=radio]", back=True)
    page.keyboard.press("Space")  # resumes it
    bots.first.locator(".pc-meta").wait_for()
    assert page.locator("#pc-conv-title input").input_value() == QUESTION
    assert page.locator("#pc-sources details.pc-card").count() >= 1


def test_phone_width_shows_answer_and_cards_without_horizontal_scrolling(page: Any) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    msg = ask(page, QUESTION)
    card = page.locator("#pc-sources details.pc-card").first
    page.screenshot(path=str(ARTIFACTS / "phone-chat.png"), full_page=True)  # docs/img/phone-chat.png comes from it
    for state in ("closed", "open"):
        if state == "open":
            card.locator("summary").click()
            page.wait_for_function("document.querySelector('#pc-sources details.pc-card').open === true")
        wide = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert wide[0] <= wide[1] + 1, f"the page scrolls sideways at 390 px, card {state}: {wide[0]} > {wide[1]}"
        for box in (msg.bounding_box(), card.bounding_box()):
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= wide[1] + 1, (state, box)
