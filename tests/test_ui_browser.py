"""The real app in headless Chromium (Debian's, through Playwright): chat, cards, filters, follow-ups, exports,
feedback, uploads, collections (made in the Library, asked within from the Library and the chat), and a hostile
paper that must stay inert. One server per module; screenshots go to tests/artifacts/ (not committed)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bibtexparser
import pytest

from tests.conftest import ROOT
from tests.support.servers import free_port

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
EVIL = "evil.example"
SEEDED = "Seeded <set>"  # a collection made before the app starts (the name is shown escaped)
HOSTILE = {
    "title": 'Zebrafish lensing <img src="http://evil.example/title.png" onerror="window.__pwned=1">',
    "authors": ["Mallory Evil", "Eve Attacker"],
    "categories": ["Security <b onmouseover=\"window.__pwned=1\">x</b>"],
    "year": 2024,
    "url": "javascript:window.__pwned=1",
    "abstract": (
        "Zebrafish gravitational lensing is a new method for imaging zebrafish embryos with gravitational lenses. "
        "<script>window.__pwned=1</script> We show that zebrafish gravitational lensing improves resolution by 40%. "
        "See [the code](javascript:window.__pwned=1) and ![tracker](http://evil.example/pixel.png) for details. "
        '<a href="javascript:window.__pwned=1" onclick="window.__pwned=1">click</a> and </details>'
        '<img src="http://evil.example/x.png" onerror="window.__pwned=1"> end. The lensing law is $x^2 + y^2$.'),
}
UPLOAD_BIB = """@article{quinn_okapi_2019,
  title = {Okapi Kernels for Tidal Forecasting},
  author = {Quinn, Harper and Ode, Lin},
  year = {2019},
  abstract = {We introduce okapi kernels, a family of periodic covariance functions for forecasting tidal heights
              from sparse gauges. Okapi kernels reduce forecast error by a third on coastal benchmarks.},
}
@article{ode_tidal_2020,
  title = {Tidal Gauges as Sensors},
  author = {Ode, Lin},
  year = {2020},
  abstract = {Tidal gauges record sea level at fixed stations; we study them as a sensor network for storm surge.},
}
@article{broken_2021,
  title = {An Entry Without Abstract},
  author = {Nobody, Anne},
  year = {2021},
}
"""
STREAM_PROBE = """() => {
  window.__pcLens = []; window.__pcCursor = false;
  const chat = document.querySelector('#pc-chat');
  new MutationObserver(() => {
    const bots = chat.querySelectorAll('[data-testid="bot"]');
    const last = bots[bots.length - 1];
    if (!last) return;
    if (last.querySelector('.pc-cursor')) window.__pcCursor = true;
    window.__pcLens.push(last.innerText.length);
  }).observe(chat, {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[dict[str, Any]]:
    """The app over the sample corpus plus one hostile paper, on 127.0.0.1 and a free port."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests drive Debian's chromium. Run `make browser` "
                    "(apt-get install chromium) first.")
    from rag.config import Settings
    from rag.runtime import Runtime
    from ui.app import SAMPLE_DIR, build_app, launch
    from ui.services import ensure_sample

    home = tmp_path_factory.mktemp("ui-home")
    settings = Settings(home=home, ui={"stream_delay_ms": 150})
    runtime = Runtime(settings, _embedder=embedder)
    ensure_sample(runtime, SAMPLE_DIR)
    hostile = home / "hostile.json"
    hostile.write_text(json.dumps([HOSTILE]))
    report = runtime.ingestor(progress=False).ingest([hostile])
    assert report.added == 1, report.summary()
    seeded = sorted(p.id for p in runtime.store.papers() if re.search(r"\b(EPPO|FedGMT|Video-MTR)\b", p.abstract))
    assert len(seeded) == 3
    runtime.collections().add(SEEDED, seeded)  # made before the app starts, as `paperchat collection add` would
    app = build_app(runtime, settings)
    launch(app, settings, block=False, server_port=free_port())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield {"url": app.local_url, "home": home, "runtime": runtime, "settings": settings}
    finally:
        app.close()
        runtime.close()


def debian_chromium() -> Iterator[Any]:
    """Debian's chromium driven by Playwright, offline flags on (never `playwright install`)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def browser(app_server: dict[str, Any]) -> Iterator[Any]:
    yield from debian_chromium()


@pytest.fixture
def page(browser: Any, app_server: dict[str, Any]) -> Iterator[Any]:
    """A fresh page; any request leaving 127.0.0.1 is recorded and blocked."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.outside = []  # type: ignore[attr-defined]

    def route(r: Any) -> None:
        if r.request.url.startswith(app_server["url"].rstrip("/")):
            r.continue_()
        else:
            pg.outside.append(r.request.url)  # type: ignore[attr-defined]
            r.abort()

    pg.route("**/*", route)
    pg.goto(app_server["url"])
    pg.wait_for_selector("#pc-question textarea")
    yield pg
    context.close()


def ask(page: Any, question: str, answers_before: int | None = None) -> Any:
    """Type a question, press Ask, and wait for the finished answer (its meta line); returns that message."""
    bots = page.locator('#pc-chat [data-testid="bot"]')
    before = bots.count() if answers_before is None else answers_before
    page.fill("#pc-question textarea", question)
    page.click("#pc-ask")
    done = page.locator('#pc-chat [data-testid="bot"]').nth(before).locator(".pc-meta, .pc-error")
    done.wait_for()
    return bots.nth(before)


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def procedural_label(app_server: dict[str, Any]) -> str:
    """The stored label of the sample paper on procedural pretraining (the card title the tests look for)."""
    (label,) = [p.label for p in app_server["runtime"].store.papers() if "procedural data" in p.abstract.lower()]
    return label


def test_chat_stream_cards_followup_feedback_and_exports(page: Any, app_server: dict[str, Any]) -> None:
    page.evaluate(STREAM_PROBE)
    first = ask(page, "What is procedural pretraining?")
    lens = page.evaluate("window.__pcLens")
    assert page.evaluate("window.__pcCursor"), "no partial answer was shown while streaming"
    assert len({n for n in lens if n}) >= 3, f"the answer did not grow progressively: {lens}"
    cites = first.locator("a.pc-cite")
    assert cites.count() >= 1 and re.fullmatch(r"\[\d+\]", cites.first.inner_text().strip())
    cards = page.locator("#pc-sources details.pc-card")
    label = procedural_label(app_server)
    assert cards.count() >= 1 and cards.first.locator(".pc-title").inner_text() == label
    shot(page, "chat-answer")

    cites.first.click()  # an inline [n] opens its card
    card = page.locator("#pc-card-0-1")
    page.wait_for_function("document.getElementById('pc-card-0-1').open === true")
    assert card.locator("mark.pc-evidence").count() >= 1 and card.locator(".pc-why").is_visible()
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "chat-card-open")

    second = ask(page, "Which models did they use?")  # a follow-up: memory of the first turn
    assert second.locator("a.pc-cite").count() >= 1
    titles = page.locator("#pc-sources .pc-title").all_inner_texts()
    assert label in titles, titles

    show_sources_of(page, first, "#pc-card-0-1")  # clicking an earlier answer shows its sources again

    page.locator('#pc-chat button[aria-label="Like"]').first.click()
    feedback = app_server["home"] / "feedback.jsonl"
    for _ in range(50):
        if feedback.exists() and feedback.read_text().strip():
            break
        page.wait_for_timeout(100)
    row = json.loads(feedback.read_text().splitlines()[-1])
    assert row["vote"] == "up" and row["question"] == "What is procedural pretraining?"
    assert row["citations"] and row["citations"][0]["paper_id"] and row["mode"] == "extractive"

    md = download(page, "#pc-export-md", app_server["home"])
    assert md.suffix == ".md"
    text = md.read_text()
    assert "## 1\\. What is procedural pretraining?" in text and "## References" in text and "Jiang" in text
    assert list((app_server["home"] / "exports").glob("*.md"))  # the export is kept under PAPERCHAT_HOME
    bib = download(page, "#pc-export-bib", app_server["home"])
    lib = bibtexparser.parse_string(bib.read_text())
    assert lib.entries and not lib.failed_blocks
    assert any("Jiang" in e.fields_dict["author"].value for e in lib.entries if "author" in e.fields_dict)


def show_sources_of(page: Any, message: Any, card: str, tries: int = 4) -> None:
    """Click ``message`` (on its meta line, which holds no link) until the sources panel shows ``card``. A click
    can land on another message when the chat scrolls itself to the newest answer between Playwright's aim and
    its click (seen in CI under load), so a miss is retried; a click on the answer already shown changes nothing."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(tries):
        message.locator(".pc-meta").click()
        try:
            page.wait_for_selector(card, timeout=5_000)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise


def download(page: Any, button: str, home: Path, where: str = "#pc-download") -> Path:
    """Click an export button and fetch the file from the download link that appears in ``where`` (served from
    Gradio's cache, never from PAPERCHAT_HOME)."""
    page.click(button)
    link = page.locator(f"{where} a[download]").first
    link.wait_for()
    assert str(home) not in (link.get_attribute("href") or "")
    with page.expect_download() as info:
        link.click()
    dl = info.value
    target = ARTIFACTS / f"export{Path(dl.suggested_filename).suffix}"
    dl.save_as(target)
    return target


def test_filters_applied_and_parsed_filters_shown(page: Any) -> None:
    cat = page.locator("#pc-category input")
    cat.fill("Reinforcement Learning")
    cat.press("Enter")
    msg = ask(page, "How can exploration be made more sample efficient?")
    assert "category: Reinforcement Learning" in msg.locator(".pc-filters").inner_text()
    chips = page.locator("#pc-sources details.pc-card")
    assert chips.count() >= 1
    for i in range(chips.count()):
        assert "Reinforcement Learning" in chips.nth(i).locator(".pc-chip").all_text_contents()
    shot(page, "chat-filtered")

    page.click("#pc-clear-filters")
    page.wait_for_function("document.querySelector('#pc-category input').value === ''")
    msg = ask(page, "What did Liangze Jiang find about procedural data?")
    assert "Liangze Jiang" in msg.locator(".pc-filters").inner_text()
    page.wait_for_function("document.querySelector('#pc-author input, #pc-author textarea').value.includes('Jiang')")

    page.click("#pc-new")
    page.wait_for_function("document.querySelectorAll('#pc-chat [data-testid=\"bot\"]').length === 0")


def test_hostile_paper_renders_inert(page: Any, app_server: dict[str, Any]) -> None:
    msg = ask(page, "What is zebrafish gravitational lensing?")
    assert msg.locator("a.pc-cite").count() >= 1
    page.locator("#pc-sources summary").first.click()
    page.wait_for_function("document.querySelector('#pc-sources details.pc-card').open === true")
    body = page.locator("#pc-sources details.pc-card").first.inner_text()
    assert "<script>window.__pwned=1</script>" in body  # shown as text, not run
    assert page.locator("#pc-sources .katex").count() >= 1  # $…$ in the abstract rendered as math
    shot(page, "chat-hostile")
    page.click("button[role=tab]:has-text('Library')")
    page.fill("#pc-lib-text input, #pc-lib-text textarea", "zebrafish")
    page.click("#pc-lib-search")
    page.wait_for_function("document.querySelector('#pc-library').innerText.includes('Zebrafish lensing')")
    shot(page, "library-hostile")
    assert_inert(page)

    too_long = "why " * 600
    page.click("button[role=tab]:has-text('Chat')")
    msg = ask(page, too_long.strip())
    assert "limit is 2000" in msg.inner_text()
    assert page.locator("#pc-question textarea").input_value().startswith("why")  # kept for editing
    assert_inert(page)


def assert_inert(page: Any) -> None:
    assert page.evaluate("typeof window.__pwned") == "undefined", "a hostile script ran"
    bad = page.evaluate("""() => {
      const out = [];
      const content = '.message-content, #pc-sources, #pc-library td, #pc-ingest-report, #pc-stats, #pc-header';
      for (const el of document.querySelectorAll('*')) {
        const ours = el.closest(content) !== null && el.closest('.katex') === null;
        if (ours && ['SCRIPT', 'IMG', 'IFRAME', 'OBJECT', 'EMBED', 'SVG', 'svg'].includes(el.tagName))
          out.push('element ' + el.tagName);
        for (const a of el.attributes) {
          if (a.name.startsWith('on')) out.push(el.tagName + ' ' + a.name);
          const link = ['href', 'src', 'srcset', 'action', 'formaction', 'xlink:href'].includes(a.name);
          if (link && /^\\s*(javascript|vbscript):/i.test(a.value)) out.push(el.tagName + ' ' + a.name + '=' + a.value);
          if (link && ours && /^\\s*data:/i.test(a.value)) out.push(el.tagName + ' ' + a.name + '=data:');
          if (link && a.value.includes('evil.example')) out.push(el.tagName + ' ' + a.name + '=' + a.value);
        }
      }
      return out;
    }""")
    assert bad == [], bad
    assert not [u for u in page.outside if EVIL in u], page.outside


def test_upload_a_file_and_find_its_papers(page: Any, app_server: dict[str, Any], tmp_path: Path) -> None:
    src = tmp_path / "tidal papers.bib"
    src.write_text(UPLOAD_BIB)
    page.click("button[role=tab]:has-text('Library')")
    page.set_input_files("#pc-upload input[type=file]", str(src))
    page.wait_for_selector("#pc-upload :text('tidal papers.bib')")
    page.click("#pc-ingest")
    report = page.locator("#pc-ingest-report")
    report.locator(":text('added 2')").wait_for(timeout=60_000)
    text = report.inner_text()
    assert "skipped 1" in text and "tidal papers.bib:" in text  # the bad record, by file and line
    assert list((app_server["home"] / "uploads").glob("*tidal_papers.bib"))
    page.fill("#pc-lib-text input, #pc-lib-text textarea", "okapi")
    page.click("#pc-lib-search")
    page.wait_for_function("document.querySelector('#pc-library').innerText.includes('Okapi Kernels')")
    assert "Quinn" in page.locator("#pc-library").inner_text()
    shot(page, "library-upload")

    page.click("button[role=tab]:has-text('Chat')")
    ask(page, "What are okapi kernels?")
    assert "Okapi Kernels" in page.locator("#pc-sources").inner_text()


ROW_BOX = '#pc-library [role=gridcell][data-row="{}"][data-col="0"] input[type=checkbox]'


def tick_rows(page: Any, rows: list[int]) -> list[str]:
    """Tick Library table rows; returns their paper ids (the last column)."""
    ids = []
    for r in rows:
        page.locator(ROW_BOX.format(r)).check()
        ids.append(page.locator(f'#pc-library [data-testid="cell-{r}-6"]').inner_text().strip())
    return ids


def cited_ids(app_server: dict[str, Any], page: Any) -> set[str]:
    """The ids of the papers the sources panel shows (by their stored label)."""
    by_label = {p.label: p.id for p in app_server["runtime"].store.papers()}
    titles = page.locator("#pc-sources .pc-title").all_inner_texts()
    return {by_label[t] for t in titles}


def test_collections_in_the_library_and_asking_about_selected_papers(page: Any, app_server: dict[str, Any]) -> None:
    sets = app_server["runtime"].collections()
    page.click("button[role=tab]:has-text('Library')")
    assert f"{SEEDED} (3)" in page.locator("#pc-collections").inner_text()  # made beforehand, with its count
    page.click("#pc-coll-add")  # nothing ticked: a visible message, nothing written
    page.locator("#pc-coll-status :text('select papers first')").wait_for()
    assert sets.counts() == {SEEDED: 3}

    ids = tick_rows(page, [0, 1])
    name = page.locator("#pc-coll-name input")
    name.fill("Picked in the browser")
    name.press("Enter")
    page.click("#pc-coll-add")
    page.wait_for_function("document.querySelector('#pc-collections').innerText.includes('Picked in the browser (2)')")
    assert sets.members("Picked in the browser") == frozenset(ids)
    assert "Added 2 papers" in page.locator("#pc-coll-status").inner_text()
    assert page.locator('#pc-library [data-testid="cell-0-5"]').inner_text().strip() == "Picked in the browser"
    shot(page, "library-collections")

    tick_rows(page, [0, 1])  # the table was refreshed (ticks cleared): tick the same two again
    page.click("#pc-ask-these")
    page.locator("#pc-scope .pc-scope").wait_for()  # switched to the chat, scoped to them
    assert page.locator("#pc-question textarea").is_visible()
    assert "2 selected papers" in page.locator("#pc-scope").inner_text()
    msg = ask(page, "What methods do these papers propose?")
    assert "2 selected papers" in msg.locator(".pc-filters").inner_text()
    cited = cited_ids(app_server, page)
    assert cited and cited <= set(ids), (cited, ids)
    md = download(page, "#pc-export-md", app_server["home"])
    assert "Scope: 2 selected papers" in md.read_text()

    page.click("#pc-clear-filters")  # clears the selection too
    page.wait_for_function("document.querySelector('#pc-scope').innerText.trim() === ''")

    page.click("button[role=tab]:has-text('Library')")  # the collection as a filter, exported, then made smaller
    page.click("#pc-lib-collection input")
    page.locator('li[data-testid="dropdown-option"][aria-label="Picked in the browser (2)"]').click()
    page.wait_for_function("document.querySelectorAll('#pc-library [role=gridcell][data-col=\"6\"]').length === 2")
    bib = download(page, "#pc-lib-export-bib", app_server["home"], where="#pc-lib-download").read_text()
    assert "% Scope: collection “Picked in the browser”" in bib.splitlines()[1]
    assert sorted(e.fields_dict["note"].value.split(": ", 1)[1] for e in bibtexparser.parse_string(bib).entries) == \
        sorted(ids)
    (removed,) = tick_rows(page, [1])
    page.click("#pc-coll-remove")
    page.wait_for_function("document.querySelector('#pc-collections').innerText.includes('Picked in the browser (1)')")
    assert sets.members("Picked in the browser") == frozenset(set(ids) - {removed})


def test_chat_collection_picker_scopes_the_answer(page: Any, app_server: dict[str, Any]) -> None:
    seeded = app_server["runtime"].collections().members(SEEDED)
    page.click("#pc-collection input")
    page.locator(f'li[data-testid="dropdown-option"][aria-label="{SEEDED} (3)"]').click()
    # the picker takes typed names too (allow_custom_value): ask only once it shows the picked one, or a busy
    # machine can send the question with the value it had before the click
    page.wait_for_function(f"document.querySelector('#pc-collection input').value.startsWith({json.dumps(SEEDED)})")
    msg = ask(page, "What is procedural pretraining?")  # the whole library would cite the procedural paper
    assert f"collection: {SEEDED}" in msg.locator(".pc-filters").inner_text()
    assert procedural_label(app_server) not in page.locator("#pc-sources").inner_text()
    assert cited_ids(app_server, page) <= seeded
    msg = ask(page, "What does EPPO penalize?")
    cited = cited_ids(app_server, page)
    assert cited and cited <= seeded
    shot(page, "chat-collection")
    page.click("#pc-clear-filters")
    page.wait_for_function("document.querySelector('#pc-collection input').value === ''")


def test_the_answer_length_control_gives_a_brief_or_a_thorough_answer(page: Any, app_server: dict[str, Any]) -> None:
    question = "Which papers use reinforcement learning from human feedback?"
    sizes = {}
    for n, length in enumerate(("brief", "thorough")):
        page.locator(f"#pc-length label:has-text('{length}')").click()
        msg = ask(page, question, answers_before=n)
        sizes[length] = (len(cited_ids(app_server, page)), len(msg.inner_text()))
    assert 1 <= sizes["brief"][0] <= 3 and sizes["brief"][0] <= sizes["thorough"][0]
    assert sizes["brief"][1] < sizes["thorough"][1]  # brief: 2-3 sentences, the papers named without summaries


def test_llm_mode_streams_sentences_and_notes_what_is_not_in_the_source(browser: Any,
                                                                       app_server: dict[str, Any]) -> None:
    """A second app over the same store, answering through a fake OpenAI-compatible endpoint."""
    from tests.fakes.openai_server import FakeOpenAIServer
    from ui.app import build_app, launch

    reply = ("Procedural pretraining lets models reach the same loss value with only 55, 67, 86% of the "
             "original data [1]. It also cures the common cold [1].")
    with FakeOpenAIServer(model="stub-model", api_key="sk-test", default_reply=reply, chunk_delay=0.02) as llm:
        settings = app_server["settings"].with_overrides(llm={"base_url": llm.base_url, "api_key": "sk-test",
                                                          "model": "stub-model"})
        app = build_app(app_server["runtime"], settings)
        launch(app, settings, block=False, server_port=free_port())
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        try:
            pg = context.new_page()
            pg.set_default_timeout(30_000)
            pg.goto(app.local_url)
            pg.wait_for_selector("#pc-question textarea")
            assert pg.locator("#pc-mode label:has-text('llm') input").is_checked()
            pg.evaluate(STREAM_PROBE)
            msg = ask(pg, "What is procedural pretraining?")
            assert pg.evaluate("window.__pcCursor")
            # streamed sentence by sentence (each is checked for obeyed injections before it shows), then finished
            assert len({n for n in pg.evaluate("window.__pcLens") if n}) >= 3
            assert "llm answer" in msg.locator(".pc-meta").inner_text()
            assert msg.locator("a.pc-cite").count() >= 1
            assert procedural_label(app_server) in pg.locator("#pc-sources").inner_text()
            # "cures the common cold" is not in the abstract: a quiet note, not a flagged citation
            note = msg.locator(".pc-absent").first.inner_text()
            assert note.startswith("Not in the cited abstract") and "cures the common cold" in note
            assert msg.locator("a.pc-contradicted-cite").count() == 0
            assert not any("support" in t for t in msg.locator(".pc-note").all_inner_texts())
            assert "Not in this abstract" in (pg.locator("#pc-sources").text_content() or "")  # on the closed card
            assert any("chat/completions" in r.path for r in llm.requests)
            shot(pg, "chat-llm")
        finally:
            context.close()
            app.close()
