"""`paperchat ingest <Zotero data folder> --full-text` (issue 31): each item's PDF from ``storage/<key>/``, Zotero's
``.zotero-ft-cache`` when the PDF is missing or unreadable, an item without an abstract stored from its text; then
questions only a paper's body answers, asked through the CLI, the API and MCP, cited to the right paper and page.
The same library ingested without full text never says what only the bodies say. Real embedder and Chroma;
extractive answers. The library: tests/zotero_fulltext_fixture.py."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag.answer import Answer, Citation
from rag.config import get_settings
from rag.ingest import loaders
from rag.ingest.report import collecting
from rag.qa.chain import AnswerChain
from rag.qa.prompts import CANNOT_ANSWER
from rag.runtime import Runtime
from tests.zotero_fulltext_fixture import BM25, COUNTING, FASTTEXT, PDFS, PPCOIN, QUESTIONS, SHARED, build_library
from ui.render import card_html, cited_markdown

pytestmark = pytest.mark.requires_data(*(SHARED / f for f in PDFS.values()))

IDS = {FASTTEXT: "arxiv:1607.01759", PPCOIN: "zotero:PPCN0002", COUNTING: "doi:10.1016/0022-0000(85)90041-8",
       BM25: "zotero:BLOG0004"}


def _cli(home: Path, embedder: Any, *args: str) -> tuple[int, str]:
    """`paperchat ARGS` in this process over ``home``, with the session's model instead of a second copy."""
    from rag import cli

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setenv("PAPERCHAT_HOME", str(home))
        mp.setattr("rag.runtime.make_embedder", lambda settings: embedder)
        status = cli.main(list(args))
    return status, out.getvalue()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_library(tmp_path_factory.mktemp("zotero") / "Zotero")


@pytest.fixture(scope="module")
def stores(embedder, library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The library ingested without full text (its answers kept), then `paperchat ingest --full-text` of it over
    the same store."""
    home = tmp_path_factory.mktemp("home")
    plain = Runtime(get_settings(home=home), _embedder=embedder)
    report = plain.ingestor(progress=False).ingest([library])
    assert (report.added, report.skipped, report.full_text) == (3, 1, 0), report
    chain = AnswerChain(plain)
    before = {q: chain.ask(q, mode="extractive") for q, *_ in QUESTIONS}
    plain.close()
    status, out = _cli(home, embedder, "ingest", "--full-text", "--json", str(library))
    assert status == 0, out
    yield {"home": home, "before": before, "report": json.loads(out), "library": library}


def _check(answer: dict[str, Any], key: str, says: str, page: int | None) -> dict[str, Any]:
    """The answer says ``says``, citing the paper of Zotero item ``key`` at ``page`` (None: a text without pages,
    cited without one)."""
    text = answer["answer"]
    assert answer["answerable"] and says in text, text
    cited = next(c for c in answer["citations"] if c["paper_id"] == IDS[key])
    assert cited["page"] == page and cited["coverage"] == "full text" and says in cited["passage"], cited
    assert (f"[{cited['n']}, p. {page}]" if page else f"[{cited['n']}]") in text, text
    return cited


def test_ingest_adds_passages_and_the_item_without_an_abstract(stores) -> None:
    report = stores["report"]
    # the three items stored before keep their abstract chunk (not embedded again); PPCoin, skipped before for
    # want of an abstract, is added with the abstract its PDF gives; all four get their passages
    assert (report["added"], report["unchanged"], report["skipped"], report["full_text"]) == (1, 3, 0, 4), report
    assert report["embedded_chunks"] == 1 and report["embedded_passages"] >= 40, report


def test_cli_ask_cites_the_body_to_its_paper_and_page(stores, embedder, tmp_path: Path) -> None:
    # each question is asked once, through one front end: PPCoin (no abstract in Zotero) and the web page whose
    # text has no pages here, fastText through MCP and the scan read from Zotero's cache through the API below
    asked = [QUESTIONS[1], QUESTIONS[3]]
    batch = tmp_path / "questions.txt"
    batch.write_text("\n".join(q for q, *_ in asked) + "\n")
    status, out = _cli(stores["home"], embedder, "ask", "--json", "--batch", str(batch))
    assert status == 0, out
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [r["question"] for r in rows] == [q for q, *_ in asked]
    cited = [_check(row, key, says, page) for row, (_, key, says, page) in zip(rows, asked, strict=True)]
    # in the app: the web page's passage, whose page is unknown, is linked as [n] and its card says so
    web = Citation(**{k: v for k, v in cited[1].items() if k in Citation.__dataclass_fields__})
    assert f"&#91;{web.n}&#93;" in cited_markdown(rows[1]["answer"], [web], turn=0)
    assert "page unknown · 2 The parameters we use" in card_html(web, turn=0)


def test_api_and_mcp_cite_the_body_to_its_paper_and_page(stores, embedder) -> None:
    import openai

    from tests.test_api import _start
    from ui.mcp_server import PaperTools, build_server

    settings = get_settings(home=stores["home"])
    tools = PaperTools(settings, Runtime(settings, _embedder=embedder))
    server, thread, url = _start(tools.lib)  # the API and MCP share one library (one runtime, one chain)
    try:
        question, key, says, page = QUESTIONS[2]
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
        reply = client.chat.completions.create(model="paperchat-extractive",
                                               messages=[{"role": "user", "content": question}])
        _check((reply.choices[0].message.model_extra or {})["paperchat"], key, says, page)
    finally:
        server.should_exit = True
        thread.join(10)

    async def session() -> dict[str, Any]:
        from mcp import Client

        async with Client(build_server(tools, warm=False)) as client:
            result = await client.call_tool("ask_papers", {"question": QUESTIONS[0][0]})
            assert not result.is_error, result.content
            return dict(result.structured_content or {})

    try:
        _check(asyncio.run(session()), *QUESTIONS[0][1:])
    finally:
        tools.close()


def test_without_full_text_the_body_facts_are_not_invented(stores) -> None:
    for question, _, says, _ in QUESTIONS:
        answer: Answer = stores["before"][question]
        assert says not in answer.answer, answer.answer
        assert answer.answer == CANNOT_ANSWER or all(c.page is None and not c.passage for c in answer.citations)
        assert IDS[PPCOIN] not in {c.paper_id for c in answer.citations}  # not stored: it had no abstract


def test_what_each_item_reads_and_what_is_noted(library: Path, tmp_path: Path) -> None:
    with collecting() as noted:
        papers = {p.id: p for p in loaders.load(library, passage_tokens=200).papers}
    assert set(papers) == set(IDS.values())
    fasttext, ppcoin, counting, bm25 = (papers[IDS[k]] for k in (FASTTEXT, PPCOIN, COUNTING, BM25))
    assert fasttext.abstract.startswith("This paper explores") and {p.page_start for p in fasttext.passages} == \
        {1, 2, 3, 4}
    assert ppcoin.abstract.startswith("A peer-to-peer crypto-currency design derived from Satoshi Nakamoto")
    assert "1 cent" not in ppcoin.abstract and any("1 cent" in p.text for p in ppcoin.passages)
    # the scan has no text layer: Zotero's cache instead, its form feeds giving the pages
    assert [(p.page_start, p.section) for p in counting.passages][1:] == [
        (2, "2. The basic counting procedure"), (3, "3. Probabilistic counting with stochastic averaging")]
    assert {(p.page_start, p.page_end) for p in bm25.passages} == {(0, 0)}  # a cache without page breaks
    assert [n.reason for n in noted] == [
        "no abstract in Zotero, taken from the full text ('PPCoin: Peer-to-Peer Crypto-Currency with "
        "Proof-of-Stake', Zotero item PPCN0002): the Abstract section of page 1"]
    # without full text: no attachment opened, the item without an abstract skipped as before
    plain = loaders.load(library)
    assert sorted(p.id for p in plain.papers) == sorted(IDS[k] for k in (FASTTEXT, COUNTING, BM25))
    assert all(not p.passages for p in plain.papers)
    assert [p.reason for p in plain.problems] == [
        "no abstract: 'PPCoin: Peer-to-Peer Crypto-Currency with Proof-of-Stake' (Zotero item PPCN0002)"]


def test_an_item_whose_text_cannot_be_had_keeps_its_abstract(library: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "Zotero"
    shutil.copytree(library, copy)
    (copy / "storage" / "ATTS0013" / ".zotero-ft-cache").unlink()  # the scan alone
    shutil.rmtree(copy / "storage" / "ATTP0012")  # PPCoin's PDF not synced to this computer
    with collecting() as noted:
        result = loaders.load(copy, passage_tokens=200)
    papers = {p.id: p for p in result.papers}
    assert papers[IDS[COUNTING]].abstract.startswith("We present a class") and not papers[IDS[COUNTING]].passages
    assert IDS[PPCOIN] not in papers
    [problem] = result.problems
    assert problem.reason.startswith("no abstract: 'PPCoin") and "no full text either: no full text" in problem.reason
    [line] = [n.reason for n in noted]
    assert line.startswith("full text not read, abstract only ('Probabilistic counting") and "no text layer" in line


def test_an_item_without_an_abstract_takes_one_from_zoteros_cache(library: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "Zotero"
    shutil.copytree(library, copy)
    folder = copy / "storage" / "ATTP0012"
    shutil.rmtree(folder)  # PPCoin's PDF not synced here, only Zotero's text of it (one block: no form feeds)
    folder.mkdir()
    (folder / ".zotero-ft-cache").write_text(
        "PPCoin: Peer-to-Peer Crypto-Currency with Proof-of-Stake\nSunny King, Scott Nadal\nAbstract\nA peer-to-peer "
        "crypto-currency design derived from Satoshi Nakamoto's Bitcoin, where proof-of-stake replaces proof-of-work "
        "to provide most of the network security.\nIntroduction\nA mint rate of 1 cent per coin-year consumed is "
        "chosen to give rise to a low future inflation rate.\n", encoding="utf-8")
    with collecting() as noted:
        papers = {p.id: p for p in loaders.load(copy, passage_tokens=200).papers}
    ppcoin = papers[IDS[PPCOIN]]
    assert ppcoin.abstract.startswith("A peer-to-peer crypto-currency design") and "1 cent" not in ppcoin.abstract
    assert [(p.page_start, p.page_end, p.section) for p in ppcoin.passages] == [(0, 0, "Introduction")]
    assert any(n.reason.endswith("Zotero item PPCN0002): the Abstract section of the text") for n in noted), noted


def test_ingest_without_full_text_again_keeps_the_paper_only_full_text_gave(stores, embedder, tmp_path: Path) -> None:
    """PPCoin has no abstract in Zotero: it is stored only because --full-text read its PDF. Ingesting the library
    again without --full-text skips the item, as a plain ingest does, and removes nothing: the paper, its
    passages and its membership of the Zotero collection it is in stay (issue 31: full text off again removes
    nothing the user did not ask to remove)."""
    import shutil

    home = tmp_path / "home"
    shutil.copytree(stores["home"], home)
    status, out = _cli(home, embedder, "collection", "list", "--json")
    assert status == 0 and {"name": "Reading list", "papers": 1} in json.loads(out), out
    status, out = _cli(home, embedder, "ingest", "--json", str(stores["library"]))
    report = json.loads(out)
    assert status == 0 and (report["skipped"], report["unchanged"], report["uncollected"]) == (1, 3, 0), report
    status, out = _cli(home, embedder, "collection", "list", "--json")
    assert {"name": "Reading list", "papers": 1} in json.loads(out), out
    _, key, says, page = QUESTIONS[1]
    status, out = _cli(home, embedder, "ask", "--json", "--collection", "Reading list", QUESTIONS[1][0])
    assert status == 0, out
    _check(json.loads(out), key, says, page)

