"""A HuggingFace bridge: BERT-family encoders (transformers' BertModel and its config) as grilly
models whose outputs match the torch model's. The module names mirror transformers', so a
state dict (from the model object or a safetensors file) loads by name. transformers and torch
are needed only to read a model object, never to run the grilly one."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..array import api as gp
from ..array.array import Array
from ..nn import functional as F
from ..nn.layers import Dropout, Embedding, LayerNorm, Linear
from ..nn.module import Module, ModuleList

__all__ = ["BertConfig", "GrillyBert", "HuggingFaceBridge", "get_huggingface_bridge"]

_MODEL_TYPES = ("bert", "roberta")


@dataclass
class BertConfig:
    """The fields of transformers' BertConfig that the encoder uses."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    # RoBERTa numbers positions from pad_token_id + 1 and skips padding (transformers'
    # create_position_ids_from_input_ids); BERT numbers them 0, 1, ...
    model_type: str = "bert"
    pad_token_id: int = 0

    @classmethod
    def from_any(cls, cfg) -> "BertConfig":
        """From a transformers config object, a dict, or a BertConfig."""
        if isinstance(cfg, cls):
            return cfg
        get = cfg.get if isinstance(cfg, dict) else (lambda k, d=None: getattr(cfg, k, d))
        kw = {f: get(f) for f in cls.__dataclass_fields__ if get(f) is not None}
        act = kw.get("hidden_act", "gelu")
        if act not in ("gelu", "gelu_new", "relu", "gelu_pytorch_tanh"):
            raise ValueError(f"BertConfig: hidden_act {act!r} is not supported")
        if kw.get("model_type", "bert") not in _MODEL_TYPES:
            raise ValueError(f"BertConfig: model_type {kw['model_type']!r} is not supported "
                             f"(supported: {', '.join(_MODEL_TYPES)})")
        return cls(**kw)


class _Embeddings(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.roberta, self.pad = c.model_type == "roberta", c.pad_token_id
        self.word_embeddings = Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = Dropout(0.0)

    def forward(self, ids: Array, token_type_ids: Array) -> Array:
        if self.roberta:
            # pad + 1, pad + 2, ... over the tokens that are not padding; padding gets pad
            keep = gp.astype(ids != self.pad, gp.int64)
            pos = gp.cumulative_sum(keep, axis=1) * keep + self.pad
        else:
            pos = gp.arange(ids.shape[1], device=ids.device)
        x = (self.word_embeddings(ids) + self.position_embeddings(pos)
             + self.token_type_embeddings(token_type_ids))
        return self.LayerNorm(x)


class _SelfAttention(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.heads, self.dh = c.num_attention_heads, c.hidden_size // c.num_attention_heads
        self.query = Linear(c.hidden_size, c.hidden_size)
        self.key = Linear(c.hidden_size, c.hidden_size)
        self.value = Linear(c.hidden_size, c.hidden_size)

    def _split(self, x: Array) -> Array:
        b, n, _ = x.shape
        return gp.permute_dims(gp.reshape(x, (b, n, self.heads, self.dh)), (0, 2, 1, 3))

    def forward(self, h: Array, mask_add: Array | None) -> Array:
        q, k, v = (self._split(m(h)) for m in (self.query, self.key, self.value))
        s = gp.matmul(q, gp.matrix_transpose(k)) * (1.0 / math.sqrt(self.dh))
        if mask_add is not None:
            s = s + mask_add
        ctx = gp.matmul(F.softmax(s, dim=-1), v)
        b, _, n, _ = ctx.shape
        return gp.reshape(gp.permute_dims(ctx, (0, 2, 1, 3)), (b, n, self.heads * self.dh))


class _DenseNorm(Module):
    """dense -> dropout -> LayerNorm(. + residual): BertSelfOutput and BertOutput."""

    def __init__(self, d_in: int, d_out: int, eps: float) -> None:
        super().__init__()
        self.dense = Linear(d_in, d_out)
        self.LayerNorm = LayerNorm(d_out, eps=eps)

    def forward(self, x: Array, residual: Array) -> Array:
        return self.LayerNorm(self.dense(x) + residual)


class _Attention(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.self = _SelfAttention(c)
        self.output = _DenseNorm(c.hidden_size, c.hidden_size, c.layer_norm_eps)

    def forward(self, h, mask_add):
        return self.output(self.self(h, mask_add), h)


class _Intermediate(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(c.hidden_size, c.intermediate_size)
        self.act = c.hidden_act

    def forward(self, x):
        y = self.dense(x)
        if self.act == "relu":
            return F.relu(y)
        return F.gelu(y, approximate="tanh" if self.act in ("gelu_new", "gelu_pytorch_tanh")
                      else "none")


class _Layer(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.attention = _Attention(c)
        self.intermediate = _Intermediate(c)
        self.output = _DenseNorm(c.intermediate_size, c.hidden_size, c.layer_norm_eps)

    def forward(self, h, mask_add):
        a = self.attention(h, mask_add)
        return self.output(self.intermediate(a), a)


class _Encoder(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.layer = ModuleList([_Layer(c) for _ in range(c.num_hidden_layers)])


class _Pooler(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(c.hidden_size, c.hidden_size)

    def forward(self, h):
        return gp.tanh(self.dense(h[:, 0]))


@dataclass
class EncoderOutput:
    """What the grilly encoder returns (transformers' names)."""

    last_hidden_state: Array
    pooler_output: Array | None


class GrillyBert(Module):
    """A BERT encoder in grilly.nn (transformers' BertModel, eval mode, no dropout)."""

    def __init__(self, config, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.config = BertConfig.from_any(config)
        self.embeddings = _Embeddings(self.config)
        self.encoder = _Encoder(self.config)
        self.pooler = _Pooler(self.config) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> EncoderOutput:
        """``input_ids`` (batch, seq) ints (an Array, numpy array or list); optional
        ``attention_mask`` (1 keep, 0 pad) and ``token_type_ids`` of the same shape."""
        dev = self.embeddings.word_embeddings.weight.device
        ids = gp.asarray(input_ids, device=dev)
        if ids.ndim != 2:
            raise ValueError(f"GrillyBert: input_ids must be (batch, seq), got shape {ids.shape}")
        tt = gp.zeros_like(ids) if token_type_ids is None else gp.asarray(token_type_ids,
                                                                          device=dev)
        h = self.embeddings(ids, tt)
        mask_add = None
        if attention_mask is not None:
            m = gp.astype(gp.asarray(attention_mask, device=dev), h.dtype)
            # transformers' extended mask: 0 where kept, the dtype's lowest value where padded
            lowest = -float(gp.finfo(h.dtype).max)
            mask_add = gp.reshape((1.0 - m) * lowest, (m.shape[0], 1, 1, m.shape[1]))
        for layer in self.encoder.layer:
            h = layer(h, mask_add)
        pooled = self.pooler(h) if self.pooler is not None else None
        return EncoderOutput(h, pooled)


def _numpy_state(sd: dict) -> dict:
    out = {}
    for k, v in sd.items():
        if hasattr(v, "detach"):
            v = v.detach().cpu().float().numpy()
        out[k] = np.asarray(v, dtype=np.float32)
    return out


class HuggingFaceBridge:
    """Turns transformers BERT-family encoders into grilly models."""

    def convert_transformer(self, hf_model, device=None) -> GrillyBert:
        """A GrillyBert with ``hf_model``'s config and weights (on ``device``)."""
        cfg = getattr(hf_model, "config", None)
        if cfg is None or getattr(cfg, "model_type", "bert") not in _MODEL_TYPES:
            raise ValueError("convert_transformer: expected a transformers BERT-family encoder "
                             f"(config.model_type one of {_MODEL_TYPES}), got {type(hf_model).__name__}")
        sd = hf_model.state_dict()
        prefix = next((p for p in ("bert.", "roberta.") if any(k.startswith(p) for k in sd)), "")
        sd = {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}
        return self.from_state_dict(cfg, sd, device)

    def from_state_dict(self, config, state: dict, device=None) -> GrillyBert:
        """A GrillyBert from a config and a state dict of transformers' names (torch tensors or
        numpy arrays)."""
        state = _numpy_state(state)
        model = GrillyBert(config, add_pooling_layer="pooler.dense.weight" in state)
        own = model.state_dict()
        missing = [k for k in own if k not in state]
        if missing:
            raise KeyError(f"convert_transformer: the checkpoint lacks {missing[:5]}")
        model.load_state_dict({k: state[k] for k in own})
        model.eval()
        return model.to(device) if device is not None else model

    def load_safetensors(self, path: str, config, device=None) -> GrillyBert:
        """A GrillyBert from a safetensors file of BertModel weights and its config."""
        from safetensors.numpy import load_file

        state = load_file(path)
        prefix = next((p for p in ("bert.", "roberta.") if any(k.startswith(p) for k in state)),
                      "")
        return self.from_state_dict(config, {k[len(prefix):]: v for k, v in state.items()
                                             if k.startswith(prefix)}, device)


def get_huggingface_bridge() -> HuggingFaceBridge:
    """The bridge (the seed's ``utils.get_huggingface_bridge()``)."""
    return HuggingFaceBridge()
