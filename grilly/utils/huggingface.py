"""A HuggingFace bridge: transformers' BERT-family encoders (BertModel, RobertaModel and their
configs) and GPT-2 (grilly.utils.hf_gpt2) as grilly models whose outputs match the torch
model's. The module names mirror transformers', so a state dict (from the model object or a
safetensors file) loads by name. transformers and torch are needed only to read a model object,
never to run the grilly one."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np

from ..array import api as gp
from ..array.array import Array
from ..nn.layers import Dropout, Embedding, LayerNorm, Linear
from ..nn.module import Module, ModuleList
from .hf_common import (ModelOutput, activation, as_ids, attention, config_fields, heads,
                        keep_mask, merge_heads)
from .hf_gpt2 import gpt2_from_state

__all__ = ["BertConfig", "GrillyBert", "HuggingFaceBridge", "ModelOutput",
           "get_huggingface_bridge"]

# RoBERTa's architecture under other names (the same weights and position numbering)
_ROBERTA_TYPES = ("roberta", "xlm-roberta", "camembert")
_MODEL_TYPES = ("bert",) + _ROBERTA_TYPES


@dataclass
class EncoderOutput(ModelOutput):
    """What the grilly BERT returns (transformers' names)."""

    last_hidden_state: Array
    pooler_output: Array | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


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
    is_decoder: bool = False            # BertLMHeadModel's causal self-attention
    add_cross_attention: bool = False

    @classmethod
    def from_any(cls, cfg) -> "BertConfig":
        """From a transformers config object, a dict, or a BertConfig."""
        if isinstance(cfg, cls):
            return cfg
        kw = config_fields(cls, cfg)
        if kw.get("model_type", "bert") not in _MODEL_TYPES:
            raise NotImplementedError(f"BertConfig: model_type {kw['model_type']!r} is not "
                                      f"supported (supported: {', '.join(_MODEL_TYPES)})")
        if not isinstance(kw.get("hidden_act", "gelu"), str):
            raise NotImplementedError("BertConfig: hidden_act must be an activation's name")
        activation(kw.get("hidden_act", "gelu"), "BertConfig")
        if kw.get("add_cross_attention"):
            raise NotImplementedError("BertConfig: add_cross_attention (an encoder-decoder's "
                                      "cross-attention) is not supported")
        return cls(**kw)


class _Embeddings(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.roberta, self.pad = c.model_type in _ROBERTA_TYPES, c.pad_token_id
        self.word_embeddings = Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = Dropout(0.0)

    def forward(self, ids: Array, token_type_ids: Array, pos: Array | None) -> Array:
        if pos is None and self.roberta:
            # pad + 1, pad + 2, ... over the tokens that are not padding; padding gets pad
            keep = gp.astype(ids != self.pad, gp.int64)
            pos = gp.cumulative_sum(keep, axis=1) * keep + self.pad
        elif pos is None:
            pos = gp.arange(ids.shape[1], device=ids.device)
        x = (self.word_embeddings(ids) + self.position_embeddings(pos)
             + self.token_type_embeddings(token_type_ids))
        return self.LayerNorm(x)


class _SelfAttention(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.heads, self.causal = c.num_attention_heads, c.is_decoder
        self.query = Linear(c.hidden_size, c.hidden_size)
        self.key = Linear(c.hidden_size, c.hidden_size)
        self.value = Linear(c.hidden_size, c.hidden_size)

    def forward(self, h: Array, keep: Array | None, with_probs: bool):
        q, k, v = (heads(m(h), self.heads) for m in (self.query, self.key, self.value))
        ctx, probs = attention(q, k, v, keep, 1.0 / math.sqrt(q.shape[-1]), self.causal,
                               with_probs)
        return merge_heads(ctx), probs


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

    def forward(self, h, keep, with_probs):
        ctx, probs = self.self(h, keep, with_probs)
        return self.output(ctx, h), probs


class _Intermediate(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(c.hidden_size, c.intermediate_size)
        self.act = activation(c.hidden_act, "BertConfig")

    def forward(self, x):
        return self.act(self.dense(x))


class _Layer(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.attention = _Attention(c)
        self.intermediate = _Intermediate(c)
        self.output = _DenseNorm(c.intermediate_size, c.hidden_size, c.layer_norm_eps)

    def forward(self, h, keep, with_probs):
        a, probs = self.attention(h, keep, with_probs)
        return self.output(self.intermediate(a), a), probs


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


class GrillyBert(Module):
    """A BERT encoder in grilly.nn (transformers' BertModel, eval mode, no dropout)."""

    def __init__(self, config, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.config = BertConfig.from_any(config)
        self.embeddings = _Embeddings(self.config)
        self.encoder = _Encoder(self.config)
        self.pooler = _Pooler(self.config) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_attentions: bool = False,
                output_hidden_states: bool = False) -> EncoderOutput:
        """``input_ids`` (batch, seq) ints (an Array, numpy array, torch tensor or list);
        optional ``attention_mask`` (1 keep, 0 pad), ``token_type_ids`` and ``position_ids``
        of that shape (position_ids also (seq,) or (1, seq)), as BertModel's."""
        who = type(self).__name__
        dev = self.embeddings.word_embeddings.weight.device
        ids = as_ids(input_ids, dev, who, "input_ids")
        shape = tuple(ids.shape)
        tt = (gp.zeros_like(ids) if token_type_ids is None
              else as_ids(token_type_ids, dev, who, "token_type_ids", shape))
        pos = None if position_ids is None else as_ids(position_ids, dev, who, "position_ids",
                                                       shape)
        h = self.embeddings(ids, tt, pos)
        keep = keep_mask(attention_mask, shape, self.config.is_decoder, dev, who)
        states, probs = [h], []
        for layer in self.encoder.layer:
            h, p = layer(h, keep, bool(output_attentions))
            states.append(h)
            probs.append(p)
        pooled = self.pooler(h) if self.pooler is not None else None
        return EncoderOutput(h, pooled, tuple(states) if output_hidden_states else None,
                             tuple(probs) if output_attentions else None)


def _numpy_state(sd: dict) -> dict:
    out = {}
    for k, v in sd.items():
        if hasattr(v, "detach"):
            v = v.detach().cpu().float().numpy()
        out[k] = np.asarray(v, dtype=np.float32)
    return out


def _model_type(config) -> str:
    get = config.get if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
    return get("model_type", None) or "bert"


def _read_safetensors(path: str) -> dict:
    """A safetensors file, or a directory saved by transformers' save_pretrained (one
    model.safetensors, or the shards its index names)."""
    from safetensors.numpy import load_file

    if not os.path.isdir(path):
        return load_file(path)
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
    else:
        shards = ["model.safetensors"]
    state = {}
    for s in shards:
        if not os.path.exists(os.path.join(path, s)):
            raise FileNotFoundError(f"load_safetensors: {path} has no {s}")
        state.update(load_file(os.path.join(path, s)))
    return state


class HuggingFaceBridge:
    """Turns transformers models (BERT family, GPT-2) into grilly models."""

    def convert_transformer(self, hf_model, device=None) -> Module:
        """A grilly model with ``hf_model``'s config and weights (on ``device``): a GrillyBert
        for BERT/RoBERTa encoders, a GrillyGPT2Model or GrillyGPT2LMHeadModel for GPT-2. A
        local directory saved by ``save_pretrained`` is read as ``load_safetensors`` does."""
        if isinstance(hf_model, (str, os.PathLike)) and os.path.isdir(hf_model):
            return self.load_safetensors(hf_model, None, device)
        cfg = getattr(hf_model, "config", None)
        if cfg is None or not hasattr(hf_model, "state_dict"):
            raise ValueError("convert_transformer: expected a transformers model (with a config "
                             "and a state_dict) or a directory saved by save_pretrained, got "
                             f"{hf_model!r:.80}")
        return self.from_state_dict(cfg, hf_model.state_dict(), device)

    def from_state_dict(self, config, state: dict, device=None) -> Module:
        """A grilly model from a config (transformers', a dict or a grilly config) and a state
        dict of transformers' names (torch tensors or numpy arrays)."""
        mt = _model_type(config)
        state = _numpy_state(state)
        if mt == "gpt2":
            model = gpt2_from_state(config, state)
        elif mt in _MODEL_TYPES:
            prefix = next((p for p in ("bert.", "roberta.") if any(k.startswith(p) for k in state)),
                          "")
            state = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
            model = GrillyBert(config, add_pooling_layer="pooler.dense.weight" in state)
            own = model.state_dict()
            missing = [k for k in own if k not in state]
            if missing:
                raise KeyError(f"convert_transformer: the checkpoint lacks {missing[:5]}")
            model.load_state_dict({k: state[k] for k in own})
        else:
            raise NotImplementedError(f"convert_transformer: model_type {mt!r} is not supported "
                                      f"(supported: {', '.join(_MODEL_TYPES + ('gpt2',))})")
        model.eval()
        return model.to(device) if device is not None else model

    def load_safetensors(self, path: str, config=None, device=None) -> Module:
        """A grilly model from a safetensors file, or from a directory saved by transformers'
        ``save_pretrained`` (its config.json read when ``config`` is None)."""
        path = os.fspath(path)
        if config is None:
            cfg_path = os.path.join(path if os.path.isdir(path) else os.path.dirname(path),
                                    "config.json")
            if not os.path.exists(cfg_path):
                raise ValueError(f"load_safetensors: config is None and there is no {cfg_path}")
            with open(cfg_path) as f:
                config = json.load(f)
        return self.from_state_dict(config, _read_safetensors(path), device)


def get_huggingface_bridge() -> HuggingFaceBridge:
    """The bridge (the seed's ``utils.get_huggingface_bridge()``)."""
    return HuggingFaceBridge()
