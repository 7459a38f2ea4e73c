"""The plain-BERT encoder (``rag.index.bert``) exported once to ONNX and run with ONNX Runtime, so a process
that only asks questions embeds without importing torch.

Why: importing torch takes ~3 s of every cold ``paperchat ask`` on 2 cores, about half of it; ONNX Runtime
(already installed, chromadb depends on it) imports and opens the exported model in under a second and runs
MiniLM about as fast as torch on the CPU.

The export is written by a process that already runs the torch encoder on the CPU (at the end of an ingest,
``SentenceTransformerEmbedder.export_onnx``), checked there against torch on probe batches (padding, token
types, a full window; max |difference| ≤ ``TOLERANCE``) and kept in the home's cache under the weights'
sha256, with a small JSON record (the file's own sha256, the measured difference) written last. A process
opens it only when that record matches the file; a missing, torn or unreadable export means torch, as before.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from rag.index.segments import file_sha256, fsync_dir

log = logging.getLogger(__name__)

TOLERANCE = 1e-5  # max |difference| from the torch encoder's pooled vectors on the probes
OPSET = 17


def path_for(cache_dir: Path, weights_sha256: str) -> Path:
    """Where the export of the model with these weights lives (its record: the same name + ``.json``)."""
    return cache_dir / "encoders" / f"bert-{weights_sha256[:16]}.onnx"


def _record(path: Path) -> Path:
    return path.with_name(path.name + ".json")


class OnnxBert:
    """Token ids → mean-pooled sentence vectors (not normalised), like ``BertEncoder.forward`` on numpy arrays."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or os.cpu_count() or 1
        opts.inter_op_num_threads = 1
        # No busy-waiting between calls: the process shares its cores (Chroma, other clients, a UI).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def forward(self, input_ids: np.ndarray, token_types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out = self.session.run(None, {"ids": input_ids.astype(np.int64), "types": token_types.astype(np.int64),
                                      "mask": mask.astype(np.int64)})[0]
        return np.asarray(out, dtype=np.float32)


def vouched(path: Path, weights_sha256: str) -> bool:
    """Whether the export at ``path`` has a record for these weights that matches the file byte for byte."""
    record = _record(path)
    if not path.is_file() or not record.is_file():
        return False
    try:
        meta = json.loads(record.read_text(encoding="utf-8"))
        ok = (meta.get("weights_sha256") == weights_sha256 and meta.get("size") == path.stat().st_size
              and file_sha256(path) == meta.get("sha256"))
    except (OSError, ValueError, AttributeError) as e:
        log.warning("%s: unreadable record (%s)", record, e)
        return False
    if not ok:
        log.warning("%s does not match its record; embedding with torch (the next ingest writes it again)", path)
    return ok


def load(path: Path, weights_sha256: str, threads: int | None = None) -> OnnxBert | None:
    """The export at ``path`` if its record vouches for it (same weights, same file), else None."""
    if not vouched(path, weights_sha256):
        return None
    try:
        return OnnxBert(path, threads)
    except Exception as e:  # a session that will not open (a runtime too old for the opset…): torch as before
        log.warning("cannot use the ONNX export %s (%s: %s); embedding with torch", path, type(e).__name__, e)
        return None


def probes(encoder: Any) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Batches the export is checked on: one short text, a padded batch with a second segment's token types,
    and a text as long as the model's window."""
    tok = encoder.tokenizer
    short = tok.encode("paperchat").ids
    a = tok.encode("Sparse attention over long documents.", "Does it reduce memory?")
    b = tok.encode("We propose a graph neural network for molecules and prove its expressiveness.")
    words = ("retrieval augmented generation over research abstracts with cited answers " * 64).split()
    long = tok.encode(" ".join(words)).ids[: encoder.shape.max_seq_length]
    out = []
    for rows in ([(short, [0] * len(short))], [(a.ids, a.type_ids), (b.ids, b.type_ids)], [(long, [0] * len(long))]):
        width = max(len(ids) for ids, _ in rows)
        ids = np.full((len(rows), width), encoder.pad_id, dtype=np.int64)
        types = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, (i, t) in enumerate(rows):
            ids[r, :len(i)], types[r, :len(i)], mask[r, :len(i)] = i, t, 1
        out.append((ids, types, mask))
    return out


def export(encoder: Any, path: Path, weights_sha256: str) -> bool:
    """Export the torch ``encoder`` (a ``rag.index.bert.BertEncoder`` on the CPU) to ``path``, checked against it.
    True when the export is in place; False (nothing left behind) when it cannot be written or differs."""
    import torch

    class _Module(torch.nn.Module):
        def forward(self, ids: Any, types: Any, mask: Any) -> Any:
            return encoder.forward(ids, types, mask)

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    batches = probes(encoder)
    try:
        example = tuple(torch.from_numpy(a) for a in batches[1])
        axes = {"ids": {0: "batch", 1: "width"}, "types": {0: "batch", 1: "width"},
                "mask": {0: "batch", 1: "width"}, "pooled": {0: "batch"}}
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
            torch.onnx.export(_Module(), example, str(tmp), dynamo=False, opset_version=OPSET,
                              input_names=["ids", "types", "mask"], output_names=["pooled"], dynamic_axes=axes)
        runner = OnnxBert(tmp, threads=1)
        diff = 0.0
        with torch.inference_mode():
            for ids, types, mask in batches:
                want = encoder.forward(*(torch.from_numpy(a) for a in (ids, types, mask))).float().numpy()
                diff = max(diff, float(np.abs(runner.forward(ids, types, mask) - want).max()))
        if diff > TOLERANCE:
            log.warning("the ONNX export differs from torch by %.2g (> %g); not used", diff, TOLERANCE)
            tmp.unlink(missing_ok=True)
            return False
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        meta = {"weights_sha256": weights_sha256, "sha256": file_sha256(tmp), "size": tmp.stat().st_size,
                "max_abs_difference": diff, "opset": OPSET, "torch": torch.__version__}
        _record(path).unlink(missing_ok=True)  # the record goes last: a file without one is never opened
        os.replace(tmp, path)
        rec_tmp = tmp.with_name(tmp.name + ".json")
        rec_tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
        os.replace(rec_tmp, _record(path))
        fsync_dir(path.parent)
    except Exception as e:  # an exporter that cannot trace this model: stay on torch
        log.warning("cannot export the encoder to ONNX (%s: %s); processes keep importing torch", type(e).__name__, e)
        tmp.unlink(missing_ok=True)
        return False
    log.info("encoder exported to %s (max |difference| from torch %.2g)", path, diff)
    return True


# ---- an int8 copy for scoring sentences -------------------------------------------------------------------
# Answers embed every sentence of the papers they consider, for papers nobody asked about before: most of a
# first-time extractive answer. Dynamic int8 quantisation of the export (weights per output channel, activations
# per batch) runs it ~1.8× as fast on CPUs with int8 dot products (VNNI), at a cosine of ~0.99 to the exact
# vectors. Only sentence scoring uses it (``embeddings.sentence_scoring``): stored vectors and the query vector
# retrieval compares with them stay exact.
MIN_COSINE = 0.97  # min cosine between the int8 copy's vectors and the exact export's on the probes


class _Advice(logging.Filter):
    """The quantiser logs its advice and per-tensor notes on the root logger (paperchat's modules log on their
    own): dropped while it runs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != "root"


def quantised_path(path: Path) -> Path:
    """Where the int8 copy of the export at ``path`` lives (its record: the same name + ``.json``)."""
    return path.with_name(path.stem + ".int8.onnx")


def _constants_to_initializers(model: Any) -> None:
    """The TorchScript exporter writes weights as Constant nodes; the quantiser only sees initializers."""
    keep = []
    for node in model.graph.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            tensor = node.attribute[0].t
            tensor.name = node.output[0]
            model.graph.initializer.append(tensor)
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.asarray((a * b).sum(axis=1))


def quantise(path: Path, weights_sha256: str, batches: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> bool:
    """Write the int8 copy of the vouched export at ``path``, checked against it on ``batches`` (cosine ≥
    ``MIN_COSINE`` for every row). True when it is in place; False (nothing left behind) otherwise."""
    target = quantised_path(path)
    if not vouched(path, weights_sha256):
        return False
    stage = path.with_name(f".{path.stem}.{os.getpid()}.stage.onnx")
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        model = onnx.load(str(path))
        _constants_to_initializers(model)
        onnx.save(model, str(stage))
        del model
        advice = _Advice()
        logging.getLogger().addFilter(advice)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quantize_dynamic(str(stage), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
        finally:
            logging.getLogger().removeFilter(advice)
        exact, quick = OnnxBert(path, threads=1), OnnxBert(tmp, threads=1)
        worst = min(float(_cosines(quick.forward(*b), exact.forward(*b)).min()) for b in batches)
        if worst < MIN_COSINE:
            log.warning("the int8 copy of %s reaches a cosine of only %.3f (< %g); sentences are scored exactly",
                        path, worst, MIN_COSINE)
            tmp.unlink(missing_ok=True)
            return False
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        source = json.loads(_record(path).read_text(encoding="utf-8"))["sha256"]  # vouched for above
        meta = {"weights_sha256": weights_sha256, "sha256": file_sha256(tmp), "size": tmp.stat().st_size,
                "source_sha256": source, "min_cosine": worst, "quantisation": "dynamic int8, per channel"}
        _record(target).unlink(missing_ok=True)  # the record goes last, as for the export
        os.replace(tmp, target)
        rec_tmp = tmp.with_name(tmp.name + ".json")
        rec_tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
        os.replace(rec_tmp, _record(target))
        fsync_dir(target.parent)
    except Exception as e:  # no quantiser in this onnxruntime, a graph it cannot read: score exactly
        log.warning("cannot write an int8 copy of %s (%s: %s); sentences are scored exactly", path,
                    type(e).__name__, e)
        tmp.unlink(missing_ok=True)
        return False
    finally:
        stage.unlink(missing_ok=True)
    log.info("int8 copy of the encoder written to %s (min cosine to the exact export %.4f)", target, worst)
    return True
