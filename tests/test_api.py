"""`paperchat api` with real clients against a server on 127.0.0.1: the openai SDK (whole and streamed, a
two-turn follow-up in one messages list), LangChain's ChatOpenAI, the paperchat routes, the error objects
(401, 413, 422) and the refusal to bind beyond loopback without a key, and a few concurrent clients."""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from conftest import SAMPLE, require_tool

from rag.config import get_settings
from rag.errors import ConfigError
from rag.runtime import Runtime
from tests.support.servers import free_port
from ui import api
from ui.library import Library

KEY = "pc-test-key"


class Served:
    def __init__(self, rt: Runtime, url: str) -> None:
        self.rt, self.url = rt, url

    def client(self, key: str = KEY) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, timeout=60)

    def http(self, key: str | None = KEY) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60,
                            headers={"Authorization": f"Bearer {key}"} if key else {})


def _start(lib: Library) -> tuple[Any, threading.Thread, str]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(api.asgi_app(lib), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the API did not start"
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def served(embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The sample corpus behind the API, with one key; the server runs in this process on a free port."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # single-question embeddings are faster on shared cores
    settings = get_settings(home=tmp_path_factory.mktemp("api-home"),
                            api={"key_hashes": [api.key_hash(KEY)], "requests_per_minute": 10000})
    rt = Runtime(settings, _embedder=embedder)
    assert rt.ingestor(progress=False).ingest(SAMPLE).added == 40
    server, thread, url = _start(Library.open(rt))
    yield Served(rt, url)
    server.should_exit = True
    thread.join(10)
    rt.close()
    torch.set_num_threads(threads)


def _stored(rt: Runtime) -> dict[str, str]:
    return {p.id: p.abstract for p in rt.store.papers()}


def test_openai_sdk_whole_answer_is_cited_and_carries_the_structured_turn(served: Served) -> None:
    r = served.client().chat.completions.create(model="paperchat-extractive",
                                                messages=[{"role": "user", "content": "What is EPPO?"}])
    message = r.choices[0].message
    assert "[1]" in (message.content or "") and "References:" in (message.content or "")
    turn = (message.model_extra or {})["paperchat"]
    stored = _stored(served.rt)
    assert turn["answerable"] and turn["citations"]
    assert all(c["paper_id"] in stored for c in turn["citations"])
    assert "EPPO" in stored[turn["citations"][0]["paper_id"]]
    assert set(turn) >= {"citations", "warnings", "filters", "closest", "statements"}
    assert isinstance(turn["citations"][0]["supported"], bool)
    assert r.usage is not None and r.usage.total_tokens > 0


def test_streamed_follow_up_resolves_to_the_paper_cited_before(served: Served) -> None:
    client = served.client()
    first = client.chat.completions.create(model="paperchat-extractive",
                                           messages=[{"role": "user", "content": "What is EPPO?"}])
    eppo = (first.choices[0].message.model_extra or {})["paperchat"]["citations"][0]["paper_id"]
    # A plain client sends back only the text it showed: the references list carries the cited ids.
    messages: list[Any] = [{"role": "user", "content": "What is EPPO?"},
                           {"role": "assistant", "content": first.choices[0].message.content},
                           {"role": "user", "content": "What does it penalize?"}]
    pieces, last = [], None
    for chunk in client.chat.completions.create(model="paperchat-extractive", messages=messages, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        last = chunk
    assert len(pieces) > 1 and "[1]" in "".join(pieces)
    assert last is not None and last.choices[0].finish_reason == "stop"
    turn = (last.model_extra or {})["paperchat"]
    assert turn["question"] == "What does it penalize?" and turn["standalone_question"] != turn["question"]
    assert turn["citations"][0]["paper_id"] == eppo and "penaliz" in "".join(pieces)


def test_sse_wire_format_ends_with_done(served: Served) -> None:
    with served.http() as http, http.stream("POST", "/v1/chat/completions", json={
            "model": "paperchat", "stream": True, "messages": [{"role": "user", "content": "What is FedGMT?"}]}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"


def test_curl_n_reads_the_stream_as_sse_ending_with_done(served: Served) -> None:
    curl = require_tool("curl", "apt-get install curl")  # the real `curl -N`: a skip says so, and fails under CI
    body = json.dumps({"model": "paperchat-extractive", "stream": True,
                       "messages": [{"role": "user", "content": "What is EPPO?"}]})
    out = subprocess.run([curl, "-N", "-s", "--fail", "--noproxy", "*", "--max-time", "120",
                          "-H", f"Authorization: Bearer {KEY}", "-H", "Content-Type: application/json",
                          "-d", body, served.url + "/v1/chat/completions"],
                         capture_output=True, text=True, timeout=150)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert len(chunks) > 3 and "[1]" in text and "EPPO" in text and "References:" in text
    cited = chunks[-1]["paperchat"]["citations"]
    stored = _stored(served.rt)
    assert cited and all(c["paper_id"] in stored and f"(id: {c['paper_id']})" in text for c in cited)


def test_langchain_chat_openai_gets_a_cited_answer(served: Served) -> None:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=served.url + "/v1", api_key=KEY, model="paperchat-extractive",
                     max_retries=0)
    reply = llm.invoke("What is EPPO?")
    assert "[1]" in str(reply.content) and "EPPO" in str(reply.content)


def test_models_search_papers_ask_and_stats(served: Served) -> None:
    assert {m.id for m in served.client().models.list()} == set(api.MODELS)
    with served.http() as http:
        found = http.post("/v1/search", json={"query": "federated learning", "k": 3}).json()
        assert 1 <= len(found["results"]) <= 3
        top = found["results"][0]
        assert top["paper"]["id"] in _stored(served.rt) and set(top["why"]) == {"bm25", "dense", "matched_text"}
        page = http.get("/v1/papers", params={"limit": 5}).json()
        assert len(page["papers"]) == 5 and page["has_more"]
        following = http.get("/v1/papers", params={"limit": 5, "offset": 5}).json()
        assert not {p["id"] for p in page["papers"]} & {p["id"] for p in following["papers"]}
        pid = page["papers"][0]["id"]
        assert http.get(f"/v1/papers/{pid}").json()["id"] == pid
        assert http.get("/v1/papers", params={"year": "-1900"}).json()["papers"] == []  # open ranges parse
        assert http.get("/v1/papers", params={"year": "2100-"}).json()["papers"] == []
        assert http.get("/v1/papers", params={"year": "20x4"}).status_code in (400, 422)
        missing = http.get("/v1/papers/doi:10.0/none")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        turn = http.post("/v1/ask", json={"question": "What is EPPO?", "mode": "extractive"}).json()
        assert turn["citations"] and set(turn) >= {"question", "standalone_question", "answer", "timings"}
        assert http.get("/v1/stats").json()["papers"] == 40
        assert http.get("/healthz").json() == {"status": "ok"}


def test_errors_are_openai_error_objects_without_tracebacks(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    generation = served.rt.store.generation
    caplog.set_level(logging.INFO)
    with pytest.raises(openai.AuthenticationError):
        served.client(key="wrong").chat.completions.create(model="paperchat", messages=[
            {"role": "user", "content": "What is EPPO?"}])
    with served.http(key="wrong") as http:
        r = http.get("/v1/stats")
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    with served.http(key=None) as http:
        assert http.get("/v1/models").status_code == 401
    with served.http() as http:
        big = http.post("/v1/chat/completions", content=b"{" + b" " * 400_000 + b"}",
                        headers={"content-type": "application/json"})
        assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"
        bad = http.post("/v1/chat/completions", json={"model": "paperchat"})
        assert bad.status_code == 422 and bad.json()["error"]["param"] == "messages"
        broken = http.post("/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
        assert broken.status_code == 422 and set(broken.json()["error"]) == {"message", "type", "param", "code"}
        long = http.post("/v1/ask", json={"question": "x" * 5000})
        assert long.status_code == 400 and "QUESTION_CHARS" in long.json()["error"]["message"]
        unknown = http.post("/v1/chat/completions", json={"model": "gpt-4", "messages": [
            {"role": "user", "content": "hi"}]})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
    assert not [rec for rec in caplog.records if rec.exc_info], "an error logged a traceback"
    assert served.rt.store.generation == generation


def test_rate_limit_per_key_answers_429(served: Served) -> None:
    settings = served.rt.settings.with_overrides(api={"requests_per_minute": 2})
    server, thread, url = _start(Library.open(served.rt, settings))
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as http:
            codes = [http.post("/v1/search", json={"query": "reward hacking", "k": 1}).status_code for _ in range(3)]
            assert codes == [200, 200, 429]
    finally:
        server.should_exit = True
        thread.join(10)


def test_refuses_to_bind_beyond_loopback_without_a_key(tmp_path: Path) -> None:
    settings = get_settings(home=tmp_path)
    bound: list[Any] = []
    with pytest.raises(ConfigError, match="paperchat api-key"):
        api.serve(settings, host="0.0.0.0", port=free_port(), ready=bound.append)
    assert not bound
    api.check_bind("127.0.0.1", settings)  # loopback without a key is fine
    api.check_bind("0.0.0.0", settings.with_overrides(api={"key_hashes": [api.key_hash(KEY)]}))


@pytest.mark.parametrize(("clients", "seconds"), [(5, 5), pytest.param(20, 60, id="long")])
def test_concurrent_clients_get_no_errors(served: Served, request: pytest.FixtureRequest, clients: int,
                                          seconds: int) -> None:
    """5 clients × 5 s always; the issue's 20 clients × 60 s with ``pytest --long``."""
    if clients > 5 and not request.config.getoption("--long", default=False):
        pytest.skip("long variant: pytest --long (plugin tests.plugins.long)")
    topics = ["What is EPPO?", "What is FedGMT?", "What is Video-MTR?", "papers about reward hacking",
              "What is flashbulb memory?"]
    questions = [topics[i % len(topics)] for i in range(clients)]
    errors: list[str] = []
    done = [0]
    lock = threading.Lock()

    def client(q: str) -> None:
        c = served.client()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                r = c.chat.completions.create(model="paperchat-extractive", messages=[{"role": "user", "content": q}])
                assert r.choices[0].message.content
                with lock:
                    done[0] += 1
            except Exception as e:  # counted, not raised: the test reports them all
                errors.append(repr(e))

    workers = [threading.Thread(target=client, args=(q,)) for q in questions]
    for w in workers:
        w.start()
    for w in workers:
        w.join(seconds + 60)
    assert not errors and done[0] >= clients


def test_history_is_rebuilt_from_the_references_list_or_the_structured_turn(served: Served) -> None:
    from ui import library

    lib = Library.open(served.rt)
    first = library.ask(lib, "What is EPPO?", mode="extractive")
    plain: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "What is EPPO?"},
        {"role": "assistant", "content": library.answer_text(first)},
        {"role": "user", "content": "What does it penalize?"}]
    aware = [dict(m) for m in plain]
    aware[2] = {"role": "assistant", "content": "(shown elsewhere)", "paperchat": first.to_dict()}
    for messages in (plain, aware):
        question, history = library.history_from_messages(lib, messages)
        assert question == "What does it penalize?" and [h.question for h in history] == ["What is EPPO?"]
        assert history[0].cited_ids == first.cited_ids
    with pytest.raises(Exception, match="last message"):
        library.history_from_messages(lib, plain[:3])


def test_serve_api_mounts_the_app_beside_the_api_and_refuses_an_open_bind(served: Served, tmp_path: Path) -> None:
    import uvicorn

    from ui import app as web

    with pytest.raises(ConfigError, match="PAPERCHAT_API__KEY_HASHES"):
        web.serve(get_settings(home=tmp_path), host="0.0.0.0", port=free_port(), api=True)
    settings = served.rt.settings
    port = free_port()
    from ui.library import Library

    lib = Library.open(served.rt, settings)  # as `serve --api` does: one answer chain for the app and the API
    asgi = web.mount_with_api(web.build_app(served.rt, settings, lib.chain), lib, settings)
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        both = Served(served.rt, f"http://127.0.0.1:{port}")
        with both.http() as http:
            assert http.get("/").status_code == 200 and "gradio" in http.get("/").text.lower()
            assert http.post("/v1/chat/completions", content=b"{" + b" " * 400_000 + b"}").status_code == 413
        r = both.client().chat.completions.create(model="paperchat-extractive",
                                                  messages=[{"role": "user", "content": "What is EPPO?"}])
        assert "[1]" in (r.choices[0].message.content or "")
    finally:
        server.should_exit = True
        thread.join(10)


def test_collections_list_scope_papers_search_ask_and_chat(served: Served) -> None:
    stored = {p.id: p for p in served.rt.store.papers()}
    fed = sorted(i for i, p in stored.items() if "federated" in p.abstract.lower())[:2]
    eppo = next(i for i, p in stored.items() if "EPPO" in p.abstract)
    assert len(fed) == 2 and eppo not in fed
    sets = served.rt.collections()
    sets.add("Federated reading", fed)
    try:
        with served.http() as http:
            assert http.get("/v1/collections").json() == [{"name": "Federated reading", "papers": 2}]
            page = http.get("/v1/papers", params={"collection": "Federated reading"}).json()
            assert sorted(p["id"] for p in page["papers"]) == fed
            assert page["filters"]["collection"] == "Federated reading"
            found = http.post("/v1/search", json={"query": "EPPO energy loss", "k": 5,
                                                  "filters": {"collection": "Federated reading"}}).json()
            assert found["results"] and {r["paper"]["id"] for r in found["results"]} <= set(fed)
            # asked within the collection, the EPPO question cannot cite the EPPO paper
            turn = http.post("/v1/ask", json={"question": "What is EPPO?", "mode": "extractive",
                                              "collection": "Federated reading"}).json()
            assert turn["filters"]["collection"] == "Federated reading"
            assert {c["paper_id"] for c in turn["citations"]} <= set(fed)
            inside = http.post("/v1/ask", json={"question": "How does federated learning handle clients?",
                                                "collection": "Federated reading"}).json()
            assert inside["citations"] and {c["paper_id"] for c in inside["citations"]} <= set(fed)
            # named as people type it (any case), and a brief answer (issue 32)
            typed = http.post("/v1/ask", json={"question": "How does federated learning handle clients?",
                                               "collection": "federated READING", "length": "brief"}).json()
            assert typed["filters"]["collection"] == "Federated reading"
            assert typed["citations"] and {c["paper_id"] for c in typed["citations"]} <= set(fed)
            assert len(typed["answer"]) < len(inside["answer"])
            bad = http.post("/v1/ask", json={"question": "What is EPPO?", "length": "short"})
            assert bad.status_code in (400, 422) and "length" in bad.text
            chat = http.post("/v1/chat/completions", json={
                "model": "paperchat-extractive", "collection": "Federated reading",
                "messages": [{"role": "user", "content": "How does federated learning handle clients?"}]}).json()
            cited = chat["choices"][0]["message"]["paperchat"]["citations"]
            assert cited and {c["paper_id"] for c in cited} <= set(fed)

            for r in (http.get("/v1/papers", params={"collection": "Federated readin"}),
                      http.post("/v1/ask", json={"question": "What is EPPO?", "collection": "Federated readin"}),
                      http.post("/v1/search", json={"query": "EPPO", "filters": {"collection": "Nope"}})):
                err = r.json()["error"]
                assert r.status_code == 400 and "no collection named" in err["message"], r.text
                assert "'Federated reading'" in err["message"]  # the known names, to pick from
            both = http.post("/v1/ask", json={"question": "What is EPPO?", "collection": "Federated reading",
                                              "filters": {"collection": "Other"}})
            assert both.status_code == 400 and both.json()["error"]["param"] == "collection"
    finally:
        sets.delete("Federated reading")


def test_library_adds_and_removes_papers_with_clear_errors_and_nothing_written_on_bad_input(served: Served) -> None:
    from rag.errors import InputError
    from ui import library

    rt = served.rt
    sets = rt.collections()
    ids = sorted(rt.store.paper_ids())[:3]
    before = sets.counts()
    with pytest.raises(InputError, match="select papers first"):
        library.add_to_collection(rt, "Picked", [])
    with pytest.raises(InputError, match="select papers first"):  # ids that name no stored paper are not papers
        library.add_to_collection(rt, "Picked", ["doi:10.0/none"])
    for bad in ("", "  ", "a//b", "/lead", "x\ny", "n" * 201):
        with pytest.raises(InputError):
            library.add_to_collection(rt, bad, ids)
    assert sets.counts() == before
    try:
        assert library.add_to_collection(rt, " Picked ", ids[:2] + ["doi:10.0/none"]) == ("Picked", 2, 2)
        assert library.add_to_collection(rt, "Picked", ids) == ("Picked", 1, 3)
        with pytest.raises(InputError, match="no collection named 'Pickd'.*did you mean 'Picked'"):
            library.remove_from_collection(rt, "Pickd", ids[:1])
        assert library.remove_from_collection(rt, "Picked", ids[:1]) == ("Picked", 1, 2)
        assert sets.members("Picked") == frozenset(ids[1:])
        assert library.remove_from_collection(rt, "Picked", ids[1:]) == ("Picked", 2, 0)
        assert "Picked" not in sets.counts()  # a collection lives while it has papers; the papers stay
        assert set(ids) <= set(rt.store.paper_ids())
    finally:
        if "Picked" in sets.counts():
            sets.delete("Picked")


def test_saved_conversations_per_key_listed_shown_and_resumed(served: Served, tmp_path: Path) -> None:
    """``/v1/ask`` with a conversation_id saves each turn under the caller's key; the saved turns are the
    follow-up's history (a second server, as after a restart, resumes it); another key sees none of it."""
    other = "pc-other-key"
    settings = served.rt.settings.with_overrides(api={"key_hashes": [api.key_hash(KEY), api.key_hash(other)]},
                                                 conversations_file=tmp_path / "conversations.sqlite")
    servers = []
    try:
        servers.append(_start(Library.open(served.rt, settings)))
        with served.http() as http:
            http.base_url = httpx.URL(servers[-1][2])
            first = http.post("/v1/ask", json={"question": "What is EPPO?", "mode": "extractive",
                                               "conversation_id": "new"}).json()
            cid, eppo = first["conversation_id"], first["citations"][0]["paper_id"]
            assert len(cid) == 32 and first["question"] == "What is EPPO?"
            both = http.post("/v1/ask", json={"question": "x", "conversation_id": cid,
                                              "history": [{"role": "user", "content": "y"}]})
            assert both.status_code == 400 and both.json()["error"]["param"] == "history"
        servers[-1][0].should_exit = True
        servers[-1][1].join(10)
        servers.append(_start(Library.open(served.rt, settings)))  # a restart: only the file remains
        with served.http() as http, served.http(other) as stranger:
            http.base_url = stranger.base_url = httpx.URL(servers[-1][2])
            follow = http.post("/v1/ask", json={"question": "What does it penalize?", "mode": "extractive",
                                                "conversation_id": cid[:8]}).json()
            assert follow["conversation_id"] == cid and follow["standalone_question"] != follow["question"]
            assert follow["citations"][0]["paper_id"] == eppo
            assert [(c["id"], c["turns"]) for c in http.get("/v1/conversations").json()] == [(cid, 2)]
            shown = http.get(f"/v1/conversations/{cid[:8]}").json()
            assert shown["title"] == "What is EPPO?" and [a["question"] for a in shown["answers"]] == \
                ["What is EPPO?", "What does it penalize?"]
            assert shown["answers"][1]["citations"][0]["paper_id"] == eppo
            assert stranger.get("/v1/conversations").json() == []  # another key: another owner
            hidden = stranger.get(f"/v1/conversations/{cid}")
            assert hidden.status_code == 400 and "no conversation" in hidden.json()["error"]["message"]
            resumed = stranger.post("/v1/ask", json={"question": "What does it penalize?", "conversation_id": cid})
            assert resumed.status_code == 400
            plain = http.post("/v1/ask", json={"question": "What is EPPO?", "mode": "extractive"}).json()
            assert "conversation_id" not in plain and len(http.get("/v1/conversations").json()) == 1  # stateless
    finally:
        for server, thread, _ in servers:
            server.should_exit = True
            thread.join(10)
