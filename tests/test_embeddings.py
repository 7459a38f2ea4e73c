"""The local embedder: the plain-torch BERT path gives sentence-transformers' vectors without importing it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag.index import bert
from rag.index.embeddings import bundled_model_path

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
