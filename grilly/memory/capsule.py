"""``CapsuleTransformer``: a hippocampus-inspired transformer with a capsule memory.

Each token's representation is its embedding plus a spatial context (place cells over its
position in the sequence) and a temporal context (time cells over the steps since the episode
began). Causal transformer encoder layers process the sequence; then each position queries a
capsule memory (a KeyValueMemory of earlier episodes' capsules: one vector per remembered
sequence, attention-pooled from its hidden states and projected to ``capsule_dim``) and adds the
gated, projected recall to its state (associative recall). ``remember(tokens)`` encodes
sequences into capsules and stores them (episodic encoding); the forward pass reads them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..array import api as gp
from ..array.array import Array
from ..nn.attention import TransformerEncoderLayer
from ..nn.layers import Embedding, LayerNorm, Linear
from ..nn.module import Module, ModuleList
from ..autograd.mode import no_grad
from .cells import PlaceCells, TimeCells
from .kv import ContextAggregator, KeyValueMemory

__all__ = ["CapsuleConfig", "CapsuleTransformer"]


@dataclass
class CapsuleConfig:
    """The CapsuleTransformer's sizes.

    vocab_size, d_model, num_heads, num_layers, dim_feedforward: the transformer;
    max_len: the longest sequence (place-cell range); num_place_cells, num_time_cells: the
    spatial and temporal context codes; capsule_dim: one remembered episode's vector;
    memory_capacity, memory_top_k, memory_temperature: the capsule memory's slots and reads.
    """

    vocab_size: int = 32
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    dim_feedforward: int = 128
    max_len: int = 64
    num_place_cells: int = 16
    num_time_cells: int = 16
    capsule_dim: int = 32
    memory_capacity: int = 256
    memory_top_k: int = 8
    memory_temperature: float = 0.1
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.d_model % self.num_heads:
            raise ValueError(f"CapsuleConfig: d_model {self.d_model} is not divisible by "
                             f"num_heads {self.num_heads}")
        for f in ("vocab_size", "d_model", "num_layers", "max_len", "capsule_dim",
                  "memory_capacity", "num_place_cells", "num_time_cells"):
            if getattr(self, f) < 1:
                raise ValueError(f"CapsuleConfig: {f} must be >= 1")


class CapsuleTransformer(Module):
    """See the module doc; ``model(tokens (batch, seq)) -> logits (batch, seq, vocab)``."""

    def __init__(self, config: CapsuleConfig | None = None, **kw) -> None:
        super().__init__()
        c = config if config is not None else CapsuleConfig(**kw)
        if not isinstance(c, CapsuleConfig):
            raise TypeError(f"CapsuleTransformer: config must be a CapsuleConfig, got "
                            f"{type(c).__name__}")
        self.config = c
        self.embed = Embedding(c.vocab_size, c.d_model)
        self.place = PlaceCells(np.linspace(0, c.max_len - 1, c.num_place_cells),
                                sigma=max(c.max_len / c.num_place_cells, 1.0))
        self.time = TimeCells(c.num_time_cells, 1.0, float(c.max_len))
        self.place_proj = Linear(c.num_place_cells, c.d_model)
        self.time_proj = Linear(c.num_time_cells, c.d_model)
        self.layers = ModuleList([
            TransformerEncoderLayer(c.d_model, c.num_heads, c.dim_feedforward, c.dropout,
                                    batch_first=True, norm_first=True)
            for _ in range(c.num_layers)])
        self.norm = LayerNorm(c.d_model)
        self.pool = ContextAggregator(c.d_model)
        self.to_capsule = Linear(c.d_model, c.capsule_dim)
        self.query = Linear(c.d_model, c.capsule_dim)
        self.from_capsule = Linear(c.capsule_dim, c.d_model)
        self.gate = Linear(c.d_model, 1)
        self.head = Linear(c.d_model, c.vocab_size)
        self.memory = KeyValueMemory(c.capsule_dim, c.capsule_dim, c.memory_capacity,
                                     temperature=c.memory_temperature)

    def _context(self, tokens: Array) -> Array:
        b, n = tokens.shape
        if n > self.config.max_len:
            raise ValueError(f"CapsuleTransformer: sequence length {n} exceeds max_len "
                             f"{self.config.max_len}")
        dev = self.embed.weight.device
        pos = gp.arange(n, dtype=gp.float32, device=dev)
        ctx = self.place_proj(self.place(pos)) + self.time_proj(self.time(pos + 1.0))
        return self.embed(tokens) + gp.expand_dims(ctx, axis=0)

    def encode(self, tokens) -> Array:
        """Hidden states (batch, seq, d_model) before the memory read (causal attention)."""
        tokens = gp.asarray(tokens, device=self.embed.weight.device)
        if tokens.ndim != 2:
            raise ValueError(f"CapsuleTransformer: tokens must be (batch, seq), got shape "
                             f"{tokens.shape}")
        h = self._context(tokens)
        n = tokens.shape[1]
        mask = gp.triu(gp.full((n, n), float("-inf"), device=h.device), k=1)
        for layer in self.layers:
            h = layer(h, src_mask=mask)
        return self.norm(h)

    def capsules(self, tokens) -> Array:
        """One capsule (batch, capsule_dim) per sequence: its pooled, projected states."""
        return self.to_capsule(self.pool(self.encode(tokens)))

    def remember(self, tokens) -> None:
        """Encode sequences and store their capsules in the memory (episodic encoding)."""
        with no_grad():
            caps = self.capsules(tokens)
        self.memory.write(caps, caps)

    def forward(self, tokens) -> Array:
        """Logits (batch, seq, vocab): the states plus their gated recall from the memory."""
        h = self.encode(tokens)
        if len(self.memory):
            b, n, d = h.shape
            q = gp.reshape(self.query(h), (b * n, self.config.capsule_dim))
            r = self.memory(q, top_k=self.config.memory_top_k)
            r = gp.reshape(self.from_capsule(r), (b, n, d))
            g = 1.0 / (1.0 + gp.exp(-self.gate(h)))
            h = h + g * r
        return self.head(h)
