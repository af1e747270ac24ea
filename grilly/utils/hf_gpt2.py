"""GPT-2 for the HuggingFace bridge: transformers' GPT2Model and GPT2LMHeadModel in grilly.nn,
their module names mirrored (wte, wpe, h[i].ln_1 / attn.c_attn / attn.c_proj / ln_2 /
mlp.c_fc / mlp.c_proj, ln_f, lm_head) so a transformers state dict loads by name."""
from __future__ import annotations

from dataclasses import dataclass

from ..array import api as gp
from ..array.array import Array
from ..nn import functional as F
from ..nn import init
from ..nn.layers import Dropout, Embedding, LayerNorm, Linear
from ..nn.module import Module, ModuleList
from ..nn.parameter import Parameter
from .hf_common import (ModelOutput, activation, as_ids, attention, config_fields, heads,
                        keep_mask, merge_heads)

__all__ = ["GPT2Config", "GrillyGPT2LMHeadModel", "GrillyGPT2Model"]

# the heads whose checkpoints carry the LM head (tied to wte unless the config says not)
_LM_ARCHS = ("GPT2LMHeadModel", "GPT2DoubleHeadsModel")


@dataclass
class GPT2Config:
    """The fields of transformers' GPT2Config that the model uses (transformers' names)."""

    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None          # None: 4 * n_embd
    activation_function: str = "gelu_new"
    layer_norm_epsilon: float = 1e-5
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    tie_word_embeddings: bool = True
    add_cross_attention: bool = False
    model_type: str = "gpt2"

    @classmethod
    def from_any(cls, cfg) -> "GPT2Config":
        """From a transformers GPT2Config, a dict (config.json), or a GPT2Config."""
        if isinstance(cfg, cls):
            return cfg
        kw = config_fields(cls, cfg)
        if kw.get("model_type", "gpt2") != "gpt2":
            raise NotImplementedError(f"GPT2Config: model_type {kw['model_type']!r} is not gpt2")
        if kw.get("add_cross_attention"):
            raise NotImplementedError("GPT2Config: add_cross_attention (cross-attention to an "
                                      "encoder) is not supported")
        if kw.get("n_embd", 768) % kw.get("n_head", 12):
            raise ValueError(f"GPT2Config: n_embd ({kw['n_embd']}) must be a multiple of n_head "
                             f"({kw['n_head']})")
        activation(kw.get("activation_function", "gelu_new"), "GPT2Config")
        return cls(**kw)


@dataclass
class GPT2Output(ModelOutput):
    """GPT2Model's output (transformers' names)."""

    last_hidden_state: Array
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class CausalLMOutput(ModelOutput):
    """GPT2LMHeadModel's output (transformers' names)."""

    loss: Array | None = None
    logits: Array | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


class Conv1D(Module):
    """transformers' Conv1D: a linear layer whose weight is stored (in, out), as GPT-2's."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.weight = Parameter(init.normal_(gp.zeros((nx, nf), dtype=gp.float32), std=0.02))
        self.bias = Parameter(gp.zeros((nf,), dtype=gp.float32))

    def forward(self, x: Array) -> Array:
        return gp.matmul(x, self.weight) + self.bias


class _Attention(Module):
    def __init__(self, c: GPT2Config, layer_idx: int) -> None:
        super().__init__()
        self.n_head, self.embed = c.n_head, c.n_embd
        self.c_attn = Conv1D(3 * c.n_embd, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, c.n_embd)
        self.scale = (c.n_embd // c.n_head) ** -0.5 if c.scale_attn_weights else 1.0
        if c.scale_attn_by_inverse_layer_idx:
            self.scale /= float(layer_idx + 1)

    def forward(self, x: Array, keep: Array | None, with_probs: bool):
        qkv, e = self.c_attn(x), self.embed
        q, k, v = (heads(qkv[..., i * e:(i + 1) * e], self.n_head) for i in range(3))
        out, probs = attention(q, k, v, keep, self.scale, True, with_probs)
        return self.c_proj(merge_heads(out)), probs


class _MLP(Module):
    def __init__(self, c: GPT2Config) -> None:
        super().__init__()
        inner = c.n_inner if c.n_inner is not None else 4 * c.n_embd
        self.c_fc = Conv1D(inner, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, inner)
        self.act = activation(c.activation_function, "GPT2Config")

    def forward(self, x: Array) -> Array:
        return self.c_proj(self.act(self.c_fc(x)))


class _Block(Module):
    """Pre-LayerNorm: x + attn(ln_1(x)), then + mlp(ln_2(.))."""

    def __init__(self, c: GPT2Config, layer_idx: int) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.attn = _Attention(c, layer_idx)
        self.ln_2 = LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.mlp = _MLP(c)

    def forward(self, x, keep, with_probs):
        a, probs = self.attn(self.ln_1(x), keep, with_probs)
        x = x + a
        return x + self.mlp(self.ln_2(x)), probs


class GrillyGPT2Model(Module):
    """transformers' GPT2Model in grilly.nn (eval mode, no dropout, no KV cache)."""

    def __init__(self, config) -> None:
        super().__init__()
        c = self.config = GPT2Config.from_any(config)
        self.wte = Embedding(c.vocab_size, c.n_embd)
        self.wpe = Embedding(c.n_positions, c.n_embd)
        self.drop = Dropout(0.0)
        self.h = ModuleList([_Block(c, i) for i in range(c.n_layer)])
        self.ln_f = LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_attentions: bool = False, output_hidden_states: bool = False) -> GPT2Output:
        """``input_ids`` (batch, seq); ``attention_mask`` (1 keep, 0 pad; left or right
        padding), ``token_type_ids`` (embedded by wte, as transformers') and ``position_ids``
        (default 0..seq-1, also under left padding, as transformers')."""
        who = type(self).__name__
        dev = self.wte.weight.device
        ids = as_ids(input_ids, dev, who, "input_ids")
        shape = tuple(ids.shape)
        pos = (gp.arange(shape[1], device=dev) if position_ids is None
               else as_ids(position_ids, dev, who, "position_ids", shape))
        x = self.wte(ids) + self.wpe(pos)
        if token_type_ids is not None:
            x = x + self.wte(as_ids(token_type_ids, dev, who, "token_type_ids", shape))
        keep = keep_mask(attention_mask, shape, attention_mask is not None, dev, who)
        states, probs = [], []
        for block in self.h:
            states.append(x)
            x, p = block(x, keep, bool(output_attentions))
            probs.append(p)
        x = self.ln_f(x)
        states.append(x)     # transformers' last hidden state is after ln_f
        return GPT2Output(x, tuple(states) if output_hidden_states else None,
                          tuple(probs) if output_attentions else None)


class GrillyGPT2LMHeadModel(Module):
    """transformers' GPT2LMHeadModel: GrillyGPT2Model (``transformer``) and ``lm_head``, its
    weight the token embedding's (tied) unless ``tie_word_embeddings`` is False."""

    def __init__(self, config) -> None:
        super().__init__()
        self.config = GPT2Config.from_any(config)
        self.transformer = GrillyGPT2Model(self.config)
        self.lm_head = Linear(self.config.n_embd, self.config.vocab_size, bias=False)
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None, output_attentions: bool = False,
                output_hidden_states: bool = False) -> CausalLMOutput:
        """GrillyGPT2Model's arguments; ``logits`` (batch, seq, vocab), and with ``labels``
        (batch, seq; -100 ignored) the next-token cross-entropy ``loss``, as transformers'."""
        out = self.transformer(input_ids, attention_mask, token_type_ids, position_ids,
                               output_attentions, output_hidden_states)
        logits = self.lm_head(out.last_hidden_state)
        loss = None
        if labels is not None:
            y = as_ids(labels, logits.device, type(self).__name__, "labels",
                       tuple(logits.shape[:2]))
            n, v = logits.shape[1] - 1, logits.shape[2]
            loss = F.cross_entropy(gp.reshape(logits[:, :n], (-1, v)),
                                   gp.reshape(gp.astype(y[:, 1:], gp.int64), (-1,)),
                                   ignore_index=-100)
        return CausalLMOutput(loss, logits, out.hidden_states, out.attentions)


def gpt2_from_state(config, state: dict) -> Module:
    """A GrillyGPT2LMHeadModel (the state has lm_head.weight, or the config's architectures
    name an LM head) or GrillyGPT2Model with ``state``'s numpy arrays (transformers' names)."""
    get = config.get if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
    lm = "lm_head.weight" in state or any(a in _LM_ARCHS for a in get("architectures") or ())
    base = {k[len("transformer."):]: v for k, v in state.items() if k.startswith("transformer.")}
    base = base or state
    model = GrillyGPT2LMHeadModel(config) if lm else GrillyGPT2Model(config)
    full = {("transformer." + k if lm else k): v for k, v in base.items()}
    if lm:
        head = state.get("lm_head.weight")
        if head is None and model.config.tie_word_embeddings:
            head = base.get("wte.weight")     # save_pretrained leaves the tied copy out
        if head is not None:
            full["lm_head.weight"] = head
    own = model.state_dict()
    missing = [k for k in own if k not in full]
    if missing:
        raise KeyError(f"convert_transformer: the GPT-2 checkpoint lacks {missing[:5]}")
    # only the model's own names: old checkpoints also carry attn.bias / attn.masked_bias buffers
    model.load_state_dict({k: full[k] for k in own})
    return model
