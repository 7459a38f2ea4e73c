"""A BERT sentence encoder in plain torch, for sentence-transformers models of the common shape
(a BERT ``Transformer`` module, mean pooling, optional normalisation), such as all-MiniLM-L6-v2.

Why: importing sentence-transformers costs ~10 s on this machine (it pulls in transformers' model
zoo and scikit-learn), most of a cold ``paperchat ask``. This module needs only torch, the model's
``tokenizer.json`` (through ``tokenizers``) and its ``model.safetensors``; it computes the same
vectors (tested against ``SentenceTransformer.encode`` to float32 precision). Models of any other
shape are loaded by sentence-transformers as before (``load`` returns None for them).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BertShape:
    layers: int
    heads: int
    hidden: int
    eps: float
    max_seq_length: int


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def supported(model_dir: Path) -> BertShape | None:
    """The model's shape if this module can run it (BERT, mean pooling, safetensors weights), else None."""
    try:
        cfg = _read_json(model_dir / "config.json")
        modules = _read_json(model_dir / "modules.json")
        kinds = [m.get("type", "") for m in modules]
        pooling_dir = next(m.get("path", "") for m in modules if m.get("type", "").endswith("models.Pooling"))
        pooling = _read_json(model_dir / pooling_dir / "config.json")
        st_cfg = _read_json(model_dir / "sentence_bert_config.json")
    except (OSError, ValueError, StopIteration):
        return None
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if (cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu"
            or cfg.get("position_embedding_type", "absolute") != "absolute"
            or kinds[:1] != ["sentence_transformers.models.Transformer"]
            or any(not k.endswith(("models.Transformer", "models.Pooling", "models.Normalize")) for k in kinds)
            or modes != {"pooling_mode_mean_tokens"} or pooling.get("include_prompt") is False
            or not (model_dir / "model.safetensors").is_file() or not (model_dir / "tokenizer.json").is_file()):
        return None
    return BertShape(int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"]), int(cfg["hidden_size"]),
                     float(cfg.get("layer_norm_eps", 1e-12)),
                     int(st_cfg.get("max_seq_length") or cfg.get("max_position_embeddings", 512)))


class BertEncoder:
    """Token ids → mean-pooled sentence vectors (not normalised), in inference mode."""

    def __init__(self, model_dir: Path, shape: BertShape, device: str = "cpu") -> None:
        import torch
        from safetensors.torch import load_file

        self.shape = shape
        raw = load_file(str(model_dir / "model.safetensors"), device=device)
        prefix = "bert." if any(k.startswith("bert.") for k in raw) else ""
        self._w = {k[len(prefix):]: v.float() for k, v in raw.items() if k.startswith(prefix)}
        self.tokenizer = tokenizer(model_dir)
        self.pad_id = pad_id(model_dir)
        self.dim = shape.hidden
        self._torch = torch

    def _lin(self, x: Any, name: str) -> Any:
        return self._torch.nn.functional.linear(x, self._w[f"{name}.weight"], self._w[f"{name}.bias"])

    def _norm(self, x: Any, name: str) -> Any:
        return self._torch.nn.functional.layer_norm(x, (self.shape.hidden,), self._w[f"{name}.weight"],
                                                    self._w[f"{name}.bias"], self.shape.eps)

    def forward(self, input_ids: Any, token_types: Any, mask: Any) -> Any:
        """(batch, width) long tensors → (batch, hidden) mean-pooled float tensor."""
        torch, f = self._torch, self._torch.nn.functional
        w, (b, n) = self._w, input_ids.shape
        positions = torch.arange(n, device=input_ids.device)
        x = (w["embeddings.word_embeddings.weight"][input_ids] + w["embeddings.position_embeddings.weight"][positions]
             + w["embeddings.token_type_embeddings.weight"][token_types])
        x = self._norm(x, "embeddings.LayerNorm")
        heads, size = self.shape.heads, self.shape.hidden // self.shape.heads
        keep = mask.bool()[:, None, None, :]  # attend to real tokens only

        def split(t: Any) -> Any:
            return t.view(b, n, heads, size).transpose(1, 2)

        for i in range(self.shape.layers):
            p = f"encoder.layer.{i}"
            q, k, v = (split(self._lin(x, f"{p}.attention.self.{m}")) for m in ("query", "key", "value"))
            ctx = f.scaled_dot_product_attention(q, k, v, attn_mask=keep).transpose(1, 2).reshape(b, n, -1)
            x = self._norm(x + self._lin(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
            h = f.gelu(self._lin(x, f"{p}.intermediate.dense"))
            x = self._norm(x + self._lin(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        m = mask.unsqueeze(-1).to(x.dtype)
        return (x * m).sum(1) / m.sum(1).clamp(min=1e-9)


def tokenizer(model_dir: Path) -> Any:
    """The model's fast tokenizer, with no truncation or padding (the embedder cuts and pads itself)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def pad_id(model_dir: Path) -> int:
    try:
        return int(_read_json(model_dir / "config.json").get("pad_token_id") or 0)
    except (OSError, ValueError):
        return 0


def load(model_dir: Path, device: str = "cpu") -> BertEncoder | None:
    """The plain-torch encoder for ``model_dir``, or None when the model is not of the supported shape."""
    shape = supported(model_dir)
    if shape is None:
        log.info("%s: not a BERT mean-pooling model; loading it with sentence-transformers", model_dir)
        return None
    return BertEncoder(model_dir, shape, device)
