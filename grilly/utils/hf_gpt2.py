"""GPT-2 for the HuggingFace bridge: transformers' GPT2Model and GPT2LMHeadModel in grilly.nn,
their module names mirrored (wte, wpe, h[i].ln_1 / attn.c_attn / attn.c_proj / ln_2 /
mlp.c_fc / mlp.c_proj, ln_f, lm_head) so a transformers state dict loads by name."""
from __future__ import annotations

from dataclasses import dataclass

from ..array import api as gp
from ..array.array import Array
from ..array.defaults import get_default_dtype
from ..autograd.mode import no_grad
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
    use_cache: bool = True              # return the key/value cache unless told otherwise
    bos_token_id: int | None = 50256
    eos_token_id: int | list | None = 50256
    pad_token_id: int | None = None
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


class _CacheAlias:
    @property
    def cache(self) -> tuple | None:
        """``past_key_values`` by transformers 5's name."""
        return self.past_key_values


@dataclass
class GPT2Output(_CacheAlias, ModelOutput):
    """GPT2Model's output (transformers' names); ``past_key_values`` holds each layer's
    (key, value), (batch, heads, positions, head_dim), to pass back for the next tokens."""

    last_hidden_state: Array
    past_key_values: tuple | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class CausalLMOutput(_CacheAlias, ModelOutput):
    """GPT2LMHeadModel's output (transformers' names)."""

    loss: Array | None = None
    logits: Array | None = None
    past_key_values: tuple | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


class Conv1D(Module):
    """transformers' Conv1D: a linear layer whose weight is stored (in, out), as GPT-2's."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        d = get_default_dtype()   # torch.empty's, as transformers' Conv1D
        self.weight = Parameter(init.normal_(gp.zeros((nx, nf), dtype=d), std=0.02))
        self.bias = Parameter(gp.zeros((nf,), dtype=d))

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

    def forward(self, x: Array, keep: Array | None, with_probs: bool, past=None):
        qkv, e = self.c_attn(x), self.embed
        q, k, v = (heads(qkv[..., i * e:(i + 1) * e], self.n_head) for i in range(3))
        if past is not None:    # the cached positions' keys and values come first
            k, v = gp.concat([past[0], k], axis=2), gp.concat([past[1], v], axis=2)
        out, probs = attention(q, k, v, keep, self.scale, True, with_probs)
        return self.c_proj(merge_heads(out)), probs, (k, v)


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

    def forward(self, x, keep, with_probs, past=None):
        a, probs, present = self.attn(self.ln_1(x), keep, with_probs, past)
        x = x + a
        return x + self.mlp(self.ln_2(x)), probs, present


class GrillyGPT2Model(Module):
    """transformers' GPT2Model in grilly.nn (eval mode, no dropout), with its KV cache."""

    def __init__(self, config) -> None:
        super().__init__()
        c = self.config = GPT2Config.from_any(config)
        self.wte = Embedding(c.vocab_size, c.n_embd)
        self.wpe = Embedding(c.n_positions, c.n_embd)
        self.drop = Dropout(0.0)
        self.h = ModuleList([_Block(c, i) for i in range(c.n_layer)])
        self.ln_f = LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_attentions: bool = False, output_hidden_states: bool = False,
                past_key_values=None, use_cache: bool | None = None, cache=None) -> GPT2Output:
        """``input_ids`` (batch, seq); ``attention_mask`` (1 keep, 0 pad; left or right
        padding; over the cached positions too), ``token_type_ids`` (embedded by wte, as
        transformers') and ``position_ids`` (default past..past+seq-1, also under left
        padding, as transformers'). ``past_key_values`` (or transformers 5's ``cache``): a
        previous output's, whose positions the new tokens follow; ``use_cache`` (default the
        config's, True) returns the cache extended by these tokens."""
        who = type(self).__name__
        dev = self.wte.weight.device
        ids = as_ids(input_ids, dev, who, "input_ids")
        shape = tuple(ids.shape)
        if cache is not None:
            if past_key_values is not None:
                raise ValueError(f"{who}: give past_key_values or cache, not both")
            past_key_values = cache
        past = self._check_past(past_key_values, shape[0], who)
        n_past = 0 if past is None else past[0][0].shape[2]
        pos = (gp.arange(n_past, n_past + shape[1], device=dev) if position_ids is None
               else as_ids(position_ids, dev, who, "position_ids", shape))
        x = self.wte(ids) + self.wpe(pos)
        if token_type_ids is not None:
            x = x + self.wte(as_ids(token_type_ids, dev, who, "token_type_ids", shape))
        # (without a mask or a cache, the kernels' causal flag: no (seq, seq) mask is made)
        keep = keep_mask(attention_mask, shape, attention_mask is not None or n_past > 0, dev,
                         who, n_past)
        states, probs, presents = [], [], []
        for i, block in enumerate(self.h):
            states.append(x)
            x, p, kv = block(x, keep, bool(output_attentions), None if past is None else past[i])
            probs.append(p)
            presents.append(kv)
        x = self.ln_f(x)
        states.append(x)     # transformers' last hidden state is after ln_f
        use_cache = self.config.use_cache if use_cache is None else use_cache
        return GPT2Output(x, tuple(presents) if use_cache else None,
                          tuple(states) if output_hidden_states else None,
                          tuple(probs) if output_attentions else None)

    def _check_past(self, past, batch: int, who: str):
        """``past_key_values`` as a tuple of per-layer (key, value) Arrays, checked."""
        if past is None:
            return None
        c = self.config
        want = (batch, c.n_head, c.n_embd // c.n_head)
        if (not isinstance(past, (tuple, list)) or len(past) != c.n_layer or not all(
                isinstance(kv, (tuple, list)) and len(kv) == 2
                and all(isinstance(t, Array) for t in kv) for kv in past)):
            raise TypeError(f"{who}: past_key_values must be a previous output's: {c.n_layer} "
                            "(key, value) pairs of grilly Arrays, got "
                            f"{type(past).__name__}")
        for kv in past:
            for t in kv:
                if t.ndim != 4 or (t.shape[0], t.shape[1], t.shape[3]) != want:
                    raise ValueError(f"{who}: past_key_values entries must be (batch, heads, "
                                     f"positions, head_dim) = ({want[0]}, {want[1]}, *, "
                                     f"{want[2]}), got {tuple(t.shape)}")
        return tuple(tuple(kv) for kv in past)


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
                output_hidden_states: bool = False, past_key_values=None,
                use_cache: bool | None = None, cache=None) -> CausalLMOutput:
        """GrillyGPT2Model's arguments; ``logits`` (batch, seq, vocab), and with ``labels``
        (batch, seq; -100 ignored) the next-token cross-entropy ``loss``, as transformers'."""
        out = self.transformer(input_ids, attention_mask, token_type_ids, position_ids,
                               output_attentions, output_hidden_states, past_key_values,
                               use_cache, cache)
        logits = self.lm_head(out.last_hidden_state)
        loss = None
        if labels is not None:
            y = as_ids(labels, logits.device, type(self).__name__, "labels",
                       tuple(logits.shape[:2]))
            n, v = logits.shape[1] - 1, logits.shape[2]
            loss = F.cross_entropy(gp.reshape(logits[:, :n], (-1, v)),
                                   gp.reshape(gp.astype(y[:, 1:], gp.int64), (-1,)),
                                   ignore_index=-100)
        return CausalLMOutput(loss, logits, out.past_key_values, out.hidden_states,
                              out.attentions)

    @no_grad()
    def generate(self, input_ids, attention_mask=None, max_new_tokens: int | None = None,
                 max_length: int | None = None, do_sample: bool = False, num_beams: int = 1,
                 eos_token_id=None, pad_token_id: int | None = None, use_cache: bool = True,
                 **kwargs) -> Array:
        """Greedy decoding as transformers' ``generate(do_sample=False)``: the prompt and the
        new tokens, (batch, prompt + new) int64. ``max_new_tokens`` (else ``max_length`` in
        all; by default 20 new tokens, within n_positions); a sequence that emitted
        ``eos_token_id`` (the config's by default) continues with ``pad_token_id`` (default:
        the eos), and decoding stops once all have.
        Left-padded prompts take their ``attention_mask``; positions count the unpadded
        tokens, as transformers'. Sampling and beam search are not supported."""
        who = f"{type(self).__name__}.generate"
        if do_sample or num_beams != 1:
            raise NotImplementedError(f"{who}: only greedy decoding (do_sample=False, "
                                      "num_beams=1) is supported")
        if kwargs:
            raise NotImplementedError(f"{who}: {', '.join(sorted(kwargs))} not supported")
        c, dev = self.config, self.lm_head.weight.device
        ids = gp.astype(as_ids(input_ids, dev, who, "input_ids"), gp.int64)
        eos = c.eos_token_id if eos_token_id is None else eos_token_id
        eos = [] if eos is None else [int(e) for e in (eos if isinstance(eos, (list, tuple))
                                                       else [eos])]
        pad = pad_token_id if pad_token_id is not None else (
            c.pad_token_id if c.pad_token_id is not None else (eos[0] if eos else None))
        if attention_mask is None and pad is not None and pad not in eos:
            # transformers' inference: pads in the prompt (a pad that is not the eos) are masked
            attention_mask = ids != pad
        mask = None if attention_mask is None else gp.astype(
            as_ids(attention_mask, dev, who, "attention_mask", tuple(ids.shape)) != 0, gp.int64)
        if max_new_tokens is None:
            # transformers' default: 20 new tokens, within the model's positions
            max_new_tokens = (min(ids.shape[1] + 20, c.n_positions) if max_length is None
                              else max_length) - ids.shape[1]
        if mask is None:
            pos = gp.reshape(gp.arange(ids.shape[1], dtype=gp.int64, device=dev), (1, -1))
        else:
            pos = gp.cumsum(mask, axis=1) - 1
            pos = gp.where(mask == 0, gp.zeros((), dtype=gp.int64, device=dev), pos)
        done = gp.zeros((ids.shape[0],), dtype=gp.bool, device=dev)
        step_ids, past = ids, None
        for step in range(max(int(max_new_tokens), 0)):
            out = self(step_ids, attention_mask=mask, position_ids=pos, past_key_values=past,
                       use_cache=use_cache)
            nxt = gp.argmax(out.logits[:, -1], axis=-1)
            if eos:
                nxt = gp.where(done, gp.asarray(pad, dtype=nxt.dtype, device=dev), nxt)
                for e in eos:
                    done = gp.logical_or(done, nxt == e)
            ids = gp.concat([ids, gp.expand_dims(nxt, axis=1)], axis=1)
            if (eos and bool(gp.all(done))) or step == max_new_tokens - 1:
                break
            new_pos = pos[:, -1:] + 1
            if mask is not None:
                mask = gp.concat([mask, gp.ones((mask.shape[0], 1), dtype=gp.int64,
                                                device=dev)], axis=1)
            if use_cache:
                past, step_ids, pos = out.past_key_values, gp.expand_dims(nxt, axis=1), new_pos
            else:
                step_ids, pos = ids, gp.concat([pos, new_pos], axis=1)
        return ids


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
