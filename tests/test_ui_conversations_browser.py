"""Saved conversations in the real app, in Debian's Chromium: two turns asked, the page reloaded and the server
restarted, the conversation resumed from the sidebar, and a follow-up that resolves to the first turn's paper; with
a login, two users (two browser contexts) see disjoint sidebars."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag.conversations import LOCAL_OWNER, ConversationStore, owner_for
from tests.support.servers import free_port
from tests.test_ui_browser import CHROMIUM, ask, debian_chromium, download, shot
from ui.logins import hash_password

pytestmark = pytest.mark.browser

FIRST = "What is the energy loss phenomenon in RLHF?"
SECOND = "What does it penalize?"
THIRD = "How is it evaluated?"


class App:
    """The app over one home (the sample corpus ingested once), started and stopped on demand."""

    def __init__(self, home: Path, embedder: Any) -> None:
        self.home, self.embedder = home, embedder
        self.app: Any = None
        self.runtime: Any = None

    def start(self, users: dict[str, str] | None = None) -> str:
        from rag.config import Settings
        from rag.runtime import Runtime
        from ui.app import SAMPLE_DIR, build_app
        from ui.app import launch as launch_app
        from ui.services import ensure_sample

        settings = Settings(home=self.home, ui={"stream_delay_ms": 0, "users": users or {}})
        self.runtime = Runtime(settings, _embedder=self.embedder)
        ensure_sample(self.runtime, SAMPLE_DIR)
        self.app = build_app(self.runtime, settings)
        launch_app(self.app, settings, block=False, server_port=free_port())
        return str(self.app.local_url)

    def stop(self) -> None:
        if self.app is not None:
            self.app.close()
            self.runtime.close()
            self.app = self.runtime = None


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[App]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium) first.")
    app = App(tmp_path_factory.mktemp("conv-home"), embedder)
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture(scope="module")
def browser(served: App) -> Iterator[Any]:
    yield from debian_chromium()


def open_page(browser: Any, url: str, user: tuple[str, str] | None = None) -> Any:
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    if user:  # the login form's POST, as the login page sends it: the session cookie lands in the context
        assert context.request.post(url.rstrip("/") + "/login",
                                    form={"username": user[0], "password": user[1]}).ok
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(url)
    page.wait_for_selector("#pc-question textarea")
    return page


def sidebar_titles(page: Any, expected: int) -> list[str]:
    """Open the sidebar and read its list once it holds ``expected`` conversations."""
    if not page.locator("#pc-sidebar.open").count():  # closed, it sits beside the page (still "visible")
        page.click('#pc-sidebar button[aria-label="Toggle Sidebar"]')
        page.wait_for_selector("#pc-sidebar.open")
    if expected:
        page.locator("#pc-conversations label").nth(expected - 1).wait_for()
    page.wait_for_timeout(300)
    return [t.rsplit(" \u00b7 ", 1)[0] for t in page.locator("#pc-conversations label").all_inner_texts()]


def first_card(page: Any) -> str:
    return page.locator("#pc-sources details.pc-card .pc-title").first.inner_text()


def test_resume_after_reload_and_restart_then_follow_up(served: App, browser: Any) -> None:
    url = served.start()
    page = open_page(browser, url)
    ask(page, FIRST)
    paper = first_card(page)
    ask(page, SECOND)
    assert sidebar_titles(page, 1) == [FIRST]

    page.reload()  # the chat is empty again; the conversation is in the sidebar
    page.wait_for_selector("#pc-question textarea")
    assert page.locator('#pc-chat [data-testid="bot"]').count() == 0
    assert sidebar_titles(page, 1) == [FIRST]
    page.context.close()

    served.stop()  # a restart: nothing of the first process remains but the files
    url = served.start()
    page = open_page(browser, url)
    assert sidebar_titles(page, 1) == [FIRST]
    page.locator("#pc-conversations label", has_text=FIRST).click()
    bots = page.locator('#pc-chat [data-testid="bot"]')
    bots.nth(1).locator(".pc-meta").wait_for()
    assert bots.count() == 2 and page.locator("#pc-conv-title input").input_value() == FIRST
    assert page.locator("#pc-sources details.pc-card").count() >= 1  # the last turn's cited papers
    third = ask(page, THIRD, answers_before=2)
    assert third.locator("a.pc-cite").count() >= 1
    assert first_card(page) == paper, "the follow-up did not resolve to the first turn's paper"
    shot(page, "conversation-resumed")

    (conv,) = ConversationStore(served.home / "conversations.sqlite").list(LOCAL_OWNER)
    assert conv.turns == 3
    saved = ConversationStore(served.home / "conversations.sqlite").load(LOCAL_OWNER, conv.id)
    assert [a.question for a in saved.answers] == [FIRST, SECOND, THIRD]
    assert saved.answers[2].citations[0].title == saved.answers[0].citations[0].title

    md = download(page, "#pc-conv-export", served.home, where="#pc-conv-download")
    text = md.read_text()
    assert text.startswith("# paperchat conversation") and all(q in text for q in (FIRST, SECOND, THIRD))

    page.fill("#pc-conv-title input", "RLHF energy loss")
    page.click("#pc-conv-rename")
    page.locator("#pc-conversations label", has_text="RLHF energy loss").wait_for()
    page.click("#pc-conv-new")  # a new chat: empty, and the next question starts a second conversation
    page.wait_for_function("document.querySelectorAll('#pc-chat [data-testid=\"bot\"]').length === 0")
    ask(page, "What is FedGMT?", answers_before=0)
    assert sidebar_titles(page, 2) == ["What is FedGMT?", "RLHF energy loss"]
    page.click("#pc-conv-delete")  # deletes the current one (FedGMT)
    page.wait_for_function("document.querySelectorAll('#pc-conversations label').length === 1")
    assert sidebar_titles(page, 1) == ["RLHF energy loss"]
    page.context.close()
    served.stop()


def test_two_signed_in_users_see_disjoint_sidebars(served: App, browser: Any) -> None:
    # the login users come from the settings (ui.users: name → the hash `paperchat ui-user NAME` prints)
    url = served.start(users={"ann": hash_password("pw-ann"), "bob": hash_password("pw-bob")})
    stranger = browser.new_context()  # a wrong password does not sign in
    assert not stranger.request.post(url.rstrip("/") + "/login", form={"username": "ann", "password": "pw-bob"}).ok
    stranger.close()
    ann = open_page(browser, url, ("ann", "pw-ann"))
    bob = open_page(browser, url, ("bob", "pw-bob"))
    ask(ann, "What is FedGMT?")
    ask(bob, "What is Video-MTR?")
    ask(bob, "What does it improve?")
    for page in (ann, bob):
        page.reload()
        page.wait_for_selector("#pc-question textarea")
    assert sidebar_titles(ann, 1) == ["What is FedGMT?"]
    assert sidebar_titles(bob, 1) == ["What is Video-MTR?"]
    saved = ConversationStore(served.home / "conversations.sqlite")
    assert [c.title for c in saved.list(owner_for("ann"))] == ["What is FedGMT?"]
    assert [c.turns for c in saved.list(owner_for("bob"))] == [2]
    for page in (ann, bob):
        page.context.close()
