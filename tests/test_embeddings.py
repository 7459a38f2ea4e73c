"""The embedders: the plain-torch BERT path gives sentence-transformers' vectors without importing it, its ONNX
export (written by an ingest) gives the same vectors without importing torch, and provider=openai goes through
the OpenAI-compatible stub from ingest to a cited answer."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SAMPLE, STUB_KEY

from rag.config import Settings
from rag.errors import ConfigError, UpstreamError
from rag.index import bert, onnx_bert
from rag.index.embeddings import (
    BULK_TEXTS,
    DEFAULT_MODEL_SHA256,
    bundled_model_path,
    export_fast_encoder,
    make_embedder,
)
from rag.qa.chain import AnswerChain
from rag.runtime import Runtime
from tests.fakes.openai_server import FakeOpenAIServer

TEXTS = [
    "Attention is all you need.",
    "We propose Video-MTR, a reinforced multi-turn reasoning framework for long videos.",
    "Ünïcödé, émigrés and naïve café owners — with $\\alpha$-divergences and 4.4M examples!",
    "x",
    " ".join(["The boundary layer separates from the swept wing at high angles of attack."] * 40),  # > 256 pieces
]


def test_plain_torch_vectors_match_sentence_transformers(embedder) -> None:
    from sentence_transformers import SentenceTransformer

    assert embedder._bert is not None  # the bundled model runs without sentence-transformers
    reference = SentenceTransformer(str(bundled_model_path()), device="cpu", local_files_only=True)
    want = reference.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    got = embedder.embed(TEXTS)
    assert got.shape == want.shape == (len(TEXTS), 384)
    assert np.abs(got - want).max() < 1e-5
    assert embedder.count_tokens(TEXTS[:1]) == [len(reference.tokenizer(TEXTS[0])["input_ids"])]
    # one at a time (no padding) or in one padded batch: the same vectors
    single = np.stack([embedder.embed([t])[0] for t in TEXTS])
    assert np.abs(single - got).max() < 1e-5


def test_models_of_another_shape_are_left_to_sentence_transformers(tmp_path: Path) -> None:
    src = bundled_model_path()
    assert bert.supported(src) is not None
    model = tmp_path / "cls-pooling"
    shutil.copytree(src, model, ignore=shutil.ignore_patterns("model.safetensors"))
    (model / "model.safetensors").symlink_to(src / "model.safetensors")
    pooling = model / "1_Pooling" / "config.json"
    cfg = json.loads(pooling.read_text())
    assert bert.supported(model) is not None
    pooling.write_text(json.dumps({**cfg, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert bert.supported(model) is None and bert.load(model) is None
    pooling.write_text(json.dumps(cfg))
    (model / "config.json").write_text(json.dumps({**json.loads((src / "config.json").read_text()),
                                                   "model_type": "roberta"}))
    assert bert.supported(model) is None


@pytest.mark.timeout(300)
def test_a_cold_process_never_imports_sentence_transformers(tmp_path: Path) -> None:
    code = ("import sys; from rag.config import Settings; from rag.index.embeddings import make_embedder; "
            "e = make_embedder(Settings()); e.embed(['a question']); "
            "print(sorted(m for m in ('sentence_transformers', 'transformers', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                         cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "PAPERCHAT_HOME": str(tmp_path / "home"),
                                            "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


# ---- the ONNX export: a process that only asks never imports torch ----------------------------------------
def _embed_in_child(home: Path, tmp_path: Path, texts: list[str] = TEXTS, **env: str) -> tuple[np.ndarray, list[str]]:
    """Vectors of ``texts`` from a fresh process on ``home``, and which of torch / onnxruntime it imported."""
    out = tmp_path / "child.npy"
    code = ("import sys, numpy as np; from rag.config import Settings; from rag.index.embeddings import make_embedder;"
            f" e = make_embedder(Settings()); np.save({str(out)!r}, e.embed({texts!r})); "
            "print(sorted(m for m in ('torch', 'onnxruntime') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "PAPERCHAT_HOME": str(home), "HOME": str(tmp_path), **env})
    assert run.returncode == 0, run.stderr[-2000:]
    return np.load(out), json.loads(run.stdout.strip().replace("'", '"'))


@pytest.mark.timeout(600)
def test_an_ingest_writes_the_onnx_export_and_a_process_that_asks_never_imports_torch(embedder, export_per_home,
                                                                                        tmp_path: Path) -> None:
    home = tmp_path / "home"
    rt = Runtime(Settings(home=home))
    assert rt.embedder.inner._onnx is None  # type: ignore[attr-defined]  # nothing exported yet: torch
    before, imported = _embed_in_child(home, tmp_path)
    assert imported == ["torch"]
    assert rt.scoring_embedder is rt.embedder  # no int8 copy yet: sentences scored exactly
    rt.ingestor(progress=False).ingest(SAMPLE[:1])  # an ingest ends by writing the export
    path = onnx_bert.path_for(rt.settings.encoder_cache_dir, DEFAULT_MODEL_SHA256)
    record = json.loads(path.with_name(path.name + ".json").read_text())
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["max_abs_difference"] <= onnx_bert.TOLERANCE
    # ...and the ingesting process asks on the export from then on (chat on a new home ingests, then answers)
    assert rt.embedder.inner._onnx is not None  # type: ignore[attr-defined]
    assert np.abs(rt.embedder.inner.embed(TEXTS) - embedder.embed(TEXTS)).max() < 1e-5  # type: ignore[attr-defined]
    assert rt.scoring_embedder.name == f"{rt.embedder.name}+int8"  # the int8 copy came with it
    rt.close()
    after, imported = _embed_in_child(home, tmp_path)
    assert imported == ["onnxruntime"]
    want = embedder.embed(TEXTS)  # torch (the > 256-piece text cut as torch cuts it)
    assert np.abs(after - want).max() < 1e-5 and np.abs(before - want).max() < 1e-5
    # an ingest's batch runs on torch even there: ONNX Runtime is slower on whole abstracts (24 vs 35-40 texts/s)
    bulk = [f"{t} (variant {i})" for i in range(BULK_TEXTS // len(TEXTS) + 1) for t in TEXTS]
    vectors, imported = _embed_in_child(home, tmp_path, bulk)
    assert imported == ["onnxruntime", "torch"]
    assert np.abs(vectors - embedder.embed(bulk)).max() < 1e-5
    # embeddings.runtime=torch ignores the export
    _, imported = _embed_in_child(home, tmp_path, PAPERCHAT_EMBEDDINGS__RUNTIME="torch")
    assert imported == ["torch"]


def test_a_torn_or_foreign_onnx_export_is_never_used(embedder, export_per_home, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(home=tmp_path / "home")
    first = make_embedder(settings)
    assert export_fast_encoder(first) is True
    path = onnx_bert.path_for(settings.encoder_cache_dir, DEFAULT_MODEL_SHA256)
    good = path.read_bytes()
    assert make_embedder(settings)._onnx is not None  # type: ignore[attr-defined]
    with open(path, "r+b") as f:  # one byte changed in the middle of the weights: same size, other bytes
        f.seek(len(good) // 2)
        f.write(bytes([good[len(good) // 2] ^ 0xFF]))
    torn = make_embedder(settings)
    assert torn._onnx is None and "does not match its record" in caplog.text  # type: ignore[attr-defined]
    assert np.abs(torn.embed(TEXTS) - embedder.embed(TEXTS)).max() < 1e-5  # torch, the right vectors
    assert export_fast_encoder(torn) is True and path.read_bytes() == good  # the next ingest writes it again
    assert onnx_bert.load(path, "0" * 64) is None  # a record for other weights: not this model's export
    path.with_name(path.name + ".json").unlink()  # no record (a crash before it was written): never opened
    assert make_embedder(settings)._onnx is None  # type: ignore[attr-defined]


def test_homes_that_name_one_export_cache_share_one_export(embedder, export_per_home, tmp_path: Path) -> None:
    shared = tmp_path / "exports"
    one = Settings(home=tmp_path / "one", embeddings={"export_cache": shared})
    other = Settings(home=tmp_path / "other", embeddings={"export_cache": shared})
    assert one.encoder_cache_dir == shared
    assert Settings(home=tmp_path / "x").encoder_cache_dir == tmp_path / "x" / "cache"
    assert make_embedder(other)._onnx is None  # type: ignore[attr-defined]  # nothing exported yet
    assert export_fast_encoder(make_embedder(one)) is True
    assert onnx_bert.path_for(shared, DEFAULT_MODEL_SHA256).is_file()
    assert not (tmp_path / "one" / "cache" / "encoders").exists()  # not in the home that wrote it
    reused = make_embedder(other)  # another home finds it: ONNX Runtime, the same vectors
    assert reused._onnx is not None  # type: ignore[attr-defined]
    assert np.abs(reused.embed(TEXTS) - embedder.embed(TEXTS)).max() < 1e-5


@pytest.mark.timeout(600)
def test_answers_score_sentences_with_the_checked_int8_copy_and_retrieve_with_the_exact_encoder(
        embedder, export_per_home, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(home=tmp_path / "home")
    assert Runtime(settings).scoring_embedder.name == embedder.name  # no export yet: sentences scored exactly
    assert export_fast_encoder(make_embedder(settings)) is True  # as an ingest ends: the export and its int8 copy
    quick = onnx_bert.quantised_path(onnx_bert.path_for(settings.encoder_cache_dir, DEFAULT_MODEL_SHA256))
    record = json.loads(quick.with_name(quick.name + ".json").read_text())
    assert record["sha256"] == hashlib.sha256(quick.read_bytes()).hexdigest()
    assert record["min_cosine"] >= onnx_bert.MIN_COSINE
    exact_export = onnx_bert.path_for(settings.encoder_cache_dir, DEFAULT_MODEL_SHA256)
    assert quick.stat().st_size < 0.4 * exact_export.stat().st_size

    rt = Runtime(settings)
    scorer = rt.scoring_embedder
    assert scorer.name == f"{rt.embedder.name}+int8"  # its own name: its vectors never mix with exact ones
    exact, approx = embedder.embed(TEXTS), scorer.embed(TEXTS)
    cosines = (exact * approx).sum(axis=1)
    assert cosines.min() >= onnx_bert.MIN_COSINE and np.abs(approx - exact).max() > 1e-4  # close, not the same
    assert np.abs(rt.embedder.embed(TEXTS) - exact).max() < 1e-5  # stored and query vectors stay exact

    rt.ingestor(progress=False).ingest([p for p in SAMPLE if "EPPO" in p.read_text(encoding="utf-8")])
    chain = AnswerChain(rt)
    assert chain.evidence.embedder is scorer
    answer = chain.ask("What does EPPO penalize?")
    assert answer.answerable and answer.citations
    question = "What does EPPO penalize?"
    assert np.abs(chain.retriever.embedder.embed([question]) - embedder.embed([question])).max() < 1e-5

    exact_rt = Runtime(settings.model_copy(update={"embeddings": settings.embeddings.model_copy(
        update={"sentence_scoring": "exact"})}))
    assert exact_rt.scoring_embedder is exact_rt.embedder
    data = bytearray(quick.read_bytes())  # a torn copy is never used: sentences are scored exactly again
    data[len(data) // 2] ^= 0xFF
    quick.write_bytes(bytes(data))
    assert Runtime(settings).scoring_embedder.name == embedder.name
    assert "does not match its record" in caplog.text


# ---- provider=openai, through the OpenAI-compatible stub -------------------------------------------------
# The stub's own vectors are hash-seeded noise (tests/fakes/openai_server.fake_embedding): equal texts
# match, nothing else does. These tests give it hashed word counts instead, so that dense retrieval and
# the citation check see real similarity in the vectors the endpoint returned.
EPPO_QUESTION = "What does the EPPO algorithm penalize when training reward models for RLHF?"
EPPO_CLAIM = "EPPO penalizes the increase in energy loss in the final layer [{n}]."


def bag_of_words(item: str | list[int], dim: int) -> list[float]:
    vec = [0.0] * dim
    text = item if isinstance(item, str) else " ".join(map(str, item))
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vec[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % dim] += 1.0
    return vec


def cite_eppo(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    n = next(int(m.group(1)) for m in re.finditer(r'<source n="(\d+)">(.*?)</source>', prompt, re.S)
             if "energy loss" in m.group(2))
    return EPPO_CLAIM.format(n=n)


@pytest.fixture
def stub() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(model="stub-model", api_key=STUB_KEY, embedding_dim=256, embed_fn=bag_of_words,
                          responder=cite_eppo) as srv:
        yield srv


def openai_settings(srv: FakeOpenAIServer, **embeddings: Any) -> Settings:
    # No embeddings.api_key: the key falls back to llm.api_key, and the stub refuses requests without it.
    return Settings(embeddings={"provider": "openai", "base_url": srv.base_url, "max_retries": 1, **embeddings},
                    llm={"base_url": srv.base_url, "api_key": STUB_KEY, "model": "stub-model", "timeout_s": 5})


def test_openai_embeddings_from_the_stub_ingest_and_answer_with_citations(stub: FakeOpenAIServer) -> None:
    from rag.qa.chain import AnswerChain
    from rag.runtime import Runtime

    rt = Runtime(openai_settings(stub))
    try:
        assert rt.ingestor(progress=False).ingest(SAMPLE).added == 40
        assert (rt.embedder.name, rt.embedder.dim) == ("openai/text-embedding-3-small", 256)
        assert rt.store.count_chunks() >= 40
        sent = [t for body in stub.embedding_requests for t in body["input"]]
        assert len(stub.embedding_requests) > 1 and any("Energy loss-aware PPO" in t for t in sent)
        assert {b["model"] for b in stub.embedding_requests} == {"text-embedding-3-small"}
        before = len(stub.embedding_requests)
        for mode in ("extractive", "llm"):
            answer = AnswerChain(rt).ask(EPPO_QUESTION, mode=mode)
            assert answer.answerable and answer.citations, mode
            first = answer.citations[0]
            assert "Energy loss-aware PPO" in first.abstract and first.supported, mode
            assert "[1]" in answer.answer and "energy loss" in answer.answer.lower(), mode
        assert answer.answer.startswith("EPPO penalizes the increase in energy loss")  # the stub model's reply
        questions = [b["input"] for b in stub.embedding_requests[before:]]
        assert any(EPPO_QUESTION in t for batch in questions for t in batch)  # the question went to the stub too
        assert not stub.errors
    finally:
        rt.close()


def test_openai_embeddings_retry_and_map_failures_to_paperchat_errors(stub: FakeOpenAIServer) -> None:
    embedder = make_embedder(openai_settings(stub, dimensions=16))
    stub.queue_fault(503, retry_after=0.01, path="/embeddings")
    v = embedder.embed(["a text", "another text"])
    assert v.shape == (2, 16) and np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert len(stub.embedding_requests) == 2 and stub.embedding_requests[-1]["dimensions"] == 16
    stub.reset()
    stub.queue_fault(500, times=2, path="/embeddings")  # embeddings.max_retries=1: two attempts, then the error
    with pytest.raises(UpstreamError, match=r"the embeddings endpoint .* failed with HTTP 500 \(2 attempts\)"):
        embedder.embed(["a text"])
    stub.reset()
    stub.queue_fault("malformed_chunk", path="/embeddings")  # a 200 that is not JSON: not a bare ValueError
    with pytest.raises(UpstreamError, match="sent a malformed reply"):
        embedder.embed(["a text"])
    wrong = Settings(embeddings={"provider": "openai", "base_url": stub.base_url, "api_key": "sk-wrong"})
    with pytest.raises(ConfigError, match="refused the API key.*PAPERCHAT_EMBEDDINGS__API_KEY"):
        make_embedder(wrong).embed(["a text"])
