"""NIR (the Neuromorphic Intermediate Representation, the ``nir`` package) export and import
for grilly's spiking networks, with snnTorch 1.0's conventions (``snntorch.export_nir`` /
``snntorch.import_nir``), so models move between grilly, snnTorch and other NIR tools.

NIR's neurons are continuous-time; snnTorch reads them with a fixed step dt = 1e-4 (``dt``
here), forward Euler: a LIF ``tau dv/dt = (v_leak - v) + r I`` is v = (1 - dt/tau) v +
(r dt/tau) I, so a decay beta exports as tau = dt / (1 - beta), r = tau / dt (input scale 1),
v_leak = 0, and a spike (v > v_threshold) resets v to v_reset = 0 within its step. A CubaLIF
(syn = alpha syn + x, mem = beta mem + syn) adds tau_syn = dt / (1 - alpha), w_in = tau_syn / dt.
An IF (no leak) is v = v + r I per step (snnTorch's import reads r = 1 as v + I). Imported
neurons are ``snntorch_compat.Leaky`` / ``Synaptic`` with ``reset_mechanism="zero"``,
``reset_delay=False`` and ``init_hidden=True``, as snnTorch imports them; an input scale r dt /
tau other than 1 divides the threshold instead (snnTorch's ``hack_w_scale``: the same spikes,
the membrane in units of that scale). docs/snn.md ("NIR") lists every mapping.

``nir`` is an optional dependency, imported inside the two functions (``pip install nir``)."""
from __future__ import annotations

import numbers
import warnings
from collections import OrderedDict

import numpy as np

from ...array import api as gp
from ...array.array import Array
from ..layers import AvgPool2d, Conv1d, Conv2d, Dropout, Flatten, Identity, Linear
from ..module import Module, Sequential
from .base import KeptState
from . import neurons as _own
from . import snntorch_compat as _st
from .neurons import _Neuron
from .containers import MultiStepContainer, SeqToANNContainer, StepModeContainer

__all__ = ["export_to_nir", "import_from_nir", "NIRGraphModule"]

DT = 1e-4   # snnTorch's time step for NIR's time constants


def _nir():
    try:
        import nir
    except ImportError as e:   # an optional dependency
        raise ImportError("grilly.nn.snn.export_to_nir / import_from_nir need the nir package: "
                          "pip install nir (or pip install grilly[nir])") from e
    return nir


# ---- export -------------------------------------------------------------------------------
def _np(v, shape: tuple, dtype=np.float32) -> np.ndarray:
    """A parameter (float or Array) as a NumPy array of one sample's ``shape`` (float32; the
    recurrent neurons' float64, as snnTorch's ``np.ones(n) * beta``)."""
    if isinstance(v, Array):
        v = np.asarray(v.detach().to_device("cpu"), dtype=np.float32)
    return np.ascontiguousarray(np.broadcast_to(np.asarray(v, dtype=np.float32), shape),
                                dtype=dtype)


def _neuron_shape(m, shape) -> tuple:
    if shape is not None:
        return tuple(shape)
    for key in ("_beta", "_threshold", "_alpha"):
        v = getattr(m, key, None)
        if isinstance(v, Array) and v.ndim:
            return tuple(v.shape)
    raise ValueError(f"export_to_nir: the size of {type(m).__name__} is unknown; give "
                     "sample_data (one sample, or a batch with ignore_dims=[0])")


def _check_exportable(m) -> None:
    op = type(m).__name__
    for name in ("inhibition", "state_quant"):
        if getattr(m, name, None) not in (False, None):
            raise NotImplementedError(f"export_to_nir: {op}'s {name} has no NIR equivalent")
    if getattr(m, "refractory", 0):
        raise NotImplementedError(f"export_to_nir: {op}'s refractory has no NIR equivalent")
    g = m._graded_spikes_factor   # (an Array once a state_dict is loaded)
    if not np.all(_np(g, ()) if not isinstance(g, Array) else _np(g, g.shape) == 1.0):
        raise NotImplementedError(f"export_to_nir: {op}'s graded_spikes_factor != 1 has no NIR "
                                  "equivalent")
    if m.reset_mechanism != "zero" or m.reset_delay:
        # snnTorch exports every Leaky/Synaptic so, whatever its reset
        warnings.warn(f"export_to_nir: {op} (reset={m.reset_mechanism!r}, reset_delay="
                      f"{m.reset_delay}) is exported as NIR's neuron, which resets to v_reset = 0 "
                      "within the spike's step (reset='zero', reset_delay=False), as snnTorch "
                      "exports it", stacklevel=4)


def _lif_node(nir, beta, thr, scale, shape, dt: float, dtype=np.float32):
    """nir.LIF for v = beta v + scale x (nir.IF, v = v + r x, where beta is 1)."""
    beta, thr = _np(beta, shape, dtype), _np(thr, shape, dtype)
    scale = _np(scale, shape, dtype)
    zeros = np.zeros_like(thr)
    if np.all(beta == 1.0):
        return nir.IF(r=scale, v_threshold=thr, v_reset=zeros)
    if np.any(beta == 1.0):
        raise NotImplementedError("export_to_nir: a LIF with beta = 1 for some neurons only "
                                  "(no NIR time constant)")
    tau = dt / (1 - beta)
    r = tau / dt if np.all(scale == 1.0) else scale * tau / dt
    return nir.LIF(tau=tau, r=r, v_leak=np.zeros_like(beta), v_threshold=thr, v_reset=zeros)


def _cuba_node(nir, alpha, beta, thr, shape, dt: float, dtype=np.float32):
    alpha, beta, thr = _np(alpha, shape, dtype), _np(beta, shape, dtype), _np(thr, shape, dtype)
    if np.any(alpha == 1.0) or np.any(beta == 1.0):
        raise NotImplementedError("export_to_nir: a Synaptic with alpha or beta = 1 (no NIR "
                                  "time constant)")
    tau_syn, tau_mem = dt / (1 - alpha), dt / (1 - beta)
    return nir.CubaLIF(tau_syn=tau_syn, tau_mem=tau_mem, r=tau_mem / dt,
                       v_leak=np.zeros_like(beta), v_threshold=thr,
                       v_reset=np.zeros_like(thr), w_in=tau_syn / dt)


def _linear_node(nir, m):
    w = np.asarray(m.weight.detach().to_device("cpu"))
    if m.bias is None:
        return nir.Linear(weight=w)
    return nir.Affine(weight=w, bias=np.asarray(m.bias.detach().to_device("cpu")))


def _recurrent_nodes(nir, m, name: str, shape, dt: float) -> tuple:
    """RLeaky / RSynaptic: a LIF (CubaLIF) and its recurrent weights, a cycle, as snnTorch."""
    op = type(m).__name__
    rec = m._modules.get("recurrent")
    if rec is not None and not isinstance(rec, Linear):
        raise NotImplementedError(f"export_to_nir: {op}'s convolutional recurrence has no NIR "
                                  "equivalent here (snnTorch exports linear ones only)")
    if rec is not None:
        n = rec.weight.shape[0]
        w_rec = _linear_node(nir, rec)
    else:
        n = _neuron_shape(m, shape)
        if len(n) != 1:
            raise NotImplementedError(f"export_to_nir: {op} with one-to-one weights V needs "
                                      f"(batch, n) inputs, got a sample shape {n}")
        n = n[0]
        w_rec = nir.Linear(weight=np.diag(_np(m._V, (n,))))
    if isinstance(m, _st.RSynaptic):
        cell = _cuba_node(nir, m._decay("alpha"), m._decay("beta"), m._threshold, (n,), dt,
                          np.float64)
    else:
        cell = _lif_node(nir, m._decay("beta"), m._threshold, 1.0, (n,), dt, np.float64)
    lif, w = f"{name}.lif", f"{name}.w_rec"
    return {lif: cell, w: w_rec}, [(lif, w), (w, lif)], lif, lif, (n,)


def _conv_shape(m, shape: tuple) -> tuple:
    n = m._n
    if len(shape) != n + 1:
        raise ValueError(f"export_to_nir: {type(m).__name__} takes (C, *spatial) samples, got "
                         f"shape {shape}")
    out = []
    for i in range(n):
        size, k, s, d = shape[1 + i], m.kernel_size[i], m.stride[i], m.dilation[i]
        if m.padding == "same":
            out.append(size)
            continue
        p = 0 if m.padding == "valid" else m.padding[i]
        out.append((size + 2 * p - d * (k - 1) - 1) // s + 1)
    return (m.out_channels, *out)


def _pair(v) -> tuple:
    return (int(v), int(v)) if isinstance(v, numbers.Integral) else tuple(int(i) for i in v)


def _leaf_nodes(nir, m, name: str, shape, dt: float) -> tuple:
    """(nodes, inner edges, entry node, exit node, the output's sample shape) of one module."""
    op = type(m).__name__
    if isinstance(m, (_own.RLeaky, _st.RSynaptic)):
        _check_exportable(m)
        return _recurrent_nodes(nir, m, name, shape, dt)
    if isinstance(m, Linear):
        out = None if shape is None else (*shape[:-1], m.weight.shape[0])
        return {name: _linear_node(nir, m)}, [], name, name, out
    if isinstance(m, (Conv1d, Conv2d)):
        if m.padding_mode != "zeros":
            raise NotImplementedError(f"export_to_nir: {op}'s padding_mode={m.padding_mode!r} "
                                      "has no NIR equivalent")
        w = np.asarray(m.weight.detach().to_device("cpu"))
        bias = (np.zeros(w.shape[0], np.float32) if m.bias is None
                else np.asarray(m.bias.detach().to_device("cpu")))
        out = None if shape is None else _conv_shape(m, tuple(shape))
        spatial = None if shape is None else tuple(int(s) for s in shape[1:])
        kw = dict(weight=w, padding=m.padding, groups=m.groups, bias=bias)
        if isinstance(m, Conv1d):
            node = nir.Conv1d(input_shape=None if spatial is None else spatial[0],
                              stride=m.stride[0], dilation=m.dilation[0],
                              **{**kw, "padding": m.padding if isinstance(m.padding, str)
                                 else m.padding[0]})
        else:
            node = nir.Conv2d(input_shape=spatial, stride=m.stride, dilation=m.dilation, **kw)
        return {name: node}, [], name, name, out
    if isinstance(m, AvgPool2d) and type(m).__name__ != "AvgPool1d":
        if m.ceil_mode or not m.count_include_pad and m.padding or m.divisor_override is not None:
            raise NotImplementedError(f"export_to_nir: {op}'s ceil_mode, count_include_pad=False "
                                      "and divisor_override have no NIR equivalent")
        k, s, p = _pair(m.kernel_size), _pair(m.stride), _pair(m.padding)
        out = None
        if shape is not None:
            out = (shape[0], *((shape[1 + i] + 2 * p[i] - k[i]) // s[i] + 1 for i in range(2)))
        return {name: nir.AvgPool2d(kernel_size=k, stride=s, padding=p)}, [], name, name, out
    if isinstance(m, Flatten):
        # NIR's dimensions exclude the batch axis (snnTorch subtracts one)
        if m.start_dim == 0 or m.end_dim == 0:
            raise NotImplementedError(f"export_to_nir: {op} over the batch axis (start_dim or "
                                      "end_dim 0) has no NIR equivalent")
        start = m.start_dim - 1 if m.start_dim > 0 else m.start_dim
        end = m.end_dim - 1 if m.end_dim > 0 else m.end_dim
        out = None
        if shape is not None:
            s = list(shape)
            a, b = start % len(s), end % len(s)
            out = (*s[:a], int(np.prod(s[a:b + 1])), *s[b + 1:])
        return {name: nir.Flatten(input_type=None, start_dim=start, end_dim=end)}, [], name, \
            name, out
    if isinstance(m, _own.Synaptic):
        _check_exportable(m)
        sh = _neuron_shape(m, shape)
        node = _cuba_node(nir, m._decay("alpha"), m._decay("beta"), m._threshold, sh, dt)
        return {name: node}, [], name, name, sh
    if isinstance(m, _own.LIF):   # LIF, IF, snnTorch's Leaky and Lapicque, LIFNode, IFNode
        _check_exportable(m)
        sh = _neuron_shape(m, shape)
        beta, scale = m._decay("beta"), 1.0
        if isinstance(m, _st.Lapicque):
            beta, scale = m._leak, m._scale
        elif isinstance(m, _own.LIFNode) and m.decay_input:
            scale = 1.0 / m.tau
        return {name: _lif_node(nir, beta, m._threshold, scale, sh, dt)}, [], name, name, sh
    raise NotImplementedError(f"export_to_nir: {op} has no NIR equivalent (supported: Linear, "
                              "Conv1d, Conv2d, AvgPool2d, Flatten, LIF/IF/Leaky/Lapicque/"
                              "LIFNode/IFNode, Synaptic, RLeaky, RSynaptic, in a Sequential)")


_CHAINS = (Sequential, SeqToANNContainer, MultiStepContainer, StepModeContainer)


def _leaves(m, name: str):
    """(name, module) of every module of a (nested) Sequential in order, as nirtorch names
    them ('0', '1.0', ...); Identity and Dropout (the identity at inference) are skipped."""
    if isinstance(m, NIRGraphModule):
        raise NotImplementedError("export_to_nir: a NIRGraphModule inside another module; "
                                  "export it on its own")
    if isinstance(m, _CHAINS):
        for k, sub in m._modules.items():
            if sub is not None:
                yield from _leaves(sub, f"{name}.{k}" if name else k)
    elif not isinstance(m, (Identity, Dropout)):
        yield name, m


def export_to_nir(module: Module, sample_data=None, model_name: str = "grilly",
                  model_fwd_args=(), ignore_dims=(), *, dt: float = DT):
    """snnTorch's ``export_to_nir``: a grilly spiking network (a Sequential of layers and
    neurons, or one neuron) as a ``nir.NIRGraph`` with snnTorch's node names and parameters."""
    nir = _nir()
    if not isinstance(module, Module):
        raise TypeError(f"export_to_nir: module must be a grilly.nn.Module, got "
                        f"{type(module).__name__}")
    if model_fwd_args:
        raise NotImplementedError("export_to_nir: model_fwd_args (grilly does not trace a "
                                  "forward; it reads the Sequential's modules)")
    if not isinstance(dt, numbers.Real) or not dt > 0:
        raise ValueError(f"export_to_nir: dt must be a positive number, got {dt!r}")
    shape = None
    if sample_data is not None:
        shape = tuple(int(s) for s in np.shape(np.asarray(
            sample_data.to_device("cpu") if isinstance(sample_data, Array) else sample_data)))
        drop = {d % len(shape) for d in ignore_dims}
        shape = tuple(s for i, s in enumerate(shape) if i not in drop)
    if isinstance(module, NIRGraphModule):
        return module._to_nir(nir, shape, dt)
    # one module (not a Sequential) is one node named model_name, as nirtorch names the top
    leaves = list(_leaves(module, "")) if isinstance(module, _CHAINS) else [(model_name, module)]
    if not leaves:
        raise ValueError("export_to_nir: the module has no layers")
    if shape is None and isinstance(leaves[0][1], Linear):
        shape = (leaves[0][1].weight.shape[1],)
    in_shape = shape
    nodes, edges, prev = OrderedDict(), [], "input"
    for name, m in leaves:
        sub, inner, entry, exit_, shape = _leaf_nodes(nir, m, name, shape, dt)
        nodes.update(sub)
        edges += inner + [(prev, entry)]
        prev = exit_
    edges.append((prev, "output"))
    if in_shape is None or shape is None:
        raise ValueError("export_to_nir: the input's shape is unknown; give sample_data (one "
                         "sample, or a batch with ignore_dims=[0])")
    all_nodes = {"input": nir.Input(input_type=np.array(in_shape)), **nodes,
                 "output": nir.Output(output_type=np.array(shape))}
    graph = nir.NIRGraph(nodes=all_nodes, edges=edges)
    graph.infer_types()
    return graph


# ---- import -------------------------------------------------------------------------------
def _unique(v: np.ndarray):
    """One float where every neuron shares the value, else the per-neuron array."""
    v = np.asarray(v, dtype=np.float32)
    return float(v.flat[0]) if v.size and np.all(v == v.flat[0]) else v


def _check_resting(node, kind: str) -> None:
    for name in ("v_leak", "v_reset"):
        v = getattr(node, name, None)
        if v is not None and not np.allclose(v, 0.0):
            raise NotImplementedError(f"import_from_nir: {kind} with {name} != 0 has no grilly "
                                      "neuron (every one rests and resets at 0)")


def _neuron(cls, node, **kw):
    return cls(**kw, reset_mechanism="zero", init_hidden=True, reset_delay=False)


def _node_module(nir, node, dt: float):
    """The grilly module of one NIR node (None for Input and Output)."""
    kind = type(node).__name__
    if isinstance(node, (nir.Input, nir.Output)):
        return None
    if isinstance(node, (nir.Affine, nir.Linear)):
        w = np.asarray(node.weight, dtype=np.float32)
        m = Linear(w.shape[1], w.shape[0], bias=isinstance(node, nir.Affine))
        m.weight = _param(w)
        if m.bias is not None:
            m.bias = _param(node.bias)
        return m
    if isinstance(node, (nir.Conv1d, nir.Conv2d)):
        w = np.asarray(node.weight, dtype=np.float32)
        cls = Conv1d if isinstance(node, nir.Conv1d) else Conv2d
        ints = lambda v: v if isinstance(v, str) else tuple(  # noqa: E731
            int(i) for i in np.broadcast_to(np.asarray(v), (w.ndim - 2,)))
        m = cls(w.shape[1] * int(node.groups), w.shape[0], tuple(w.shape[2:]),
                stride=ints(node.stride), padding=ints(node.padding),
                dilation=ints(node.dilation), groups=int(node.groups))
        m.weight, m.bias = _param(w), _param(node.bias)
        return m
    if isinstance(node, nir.Flatten):
        # NIR's axes exclude the batch (snnTorch 1.0's import keeps them, flattening the batch)
        start = node.start_dim + 1 if node.start_dim >= 0 else node.start_dim
        end = node.end_dim + 1 if node.end_dim >= 0 else node.end_dim
        return Flatten(start, end)
    if isinstance(node, (nir.AvgPool2d, nir.SumPool2d)):
        k, s, p = (_pair(np.asarray(v).tolist()) for v in (node.kernel_size, node.stride,
                                                           node.padding))
        return AvgPool2d(k, s, p, divisor_override=1 if isinstance(node, nir.SumPool2d) else None)
    if isinstance(node, nir.IF):
        _check_resting(node, kind)
        thr = np.asarray(node.v_threshold, np.float32) / np.asarray(node.r, np.float32)
        return _neuron(_st.Leaky, node, beta=1.0, threshold=_unique(thr))
    if isinstance(node, nir.LIF):
        _check_resting(node, kind)
        tau = np.asarray(node.tau, np.float32)
        beta = 1 - (dt / tau)
        scale = np.asarray(node.r, np.float32) * dt / tau
        thr = np.asarray(node.v_threshold, np.float32)
        if not np.allclose(scale, 1.0):   # snnTorch's hack_w_scale: the threshold scaled
            thr = thr / scale
        return _neuron(_st.Leaky, node, beta=_unique(beta), threshold=_unique(thr))
    if isinstance(node, nir.CubaLIF):
        _check_resting(node, kind)
        tau_syn, tau_mem = (np.asarray(v, np.float32) for v in (node.tau_syn, node.tau_mem))
        alpha, beta = 1 - (dt / tau_syn), 1 - (dt / tau_mem)
        # the input's scale into syn, and syn's into mem (snnTorch asserts the second is 1)
        scale = np.asarray(node.w_in, np.float32) * (dt / tau_syn)
        mem_scale = np.asarray(node.r, np.float32) * (dt / tau_mem)
        if not np.allclose(mem_scale, 1.0):
            scale = scale * mem_scale
        thr = np.asarray(node.v_threshold, np.float32)
        if not np.allclose(scale, 1.0):
            thr = thr / scale
        return _neuron(_st.Synaptic, node, alpha=_unique(alpha), beta=_unique(beta),
                       threshold=_unique(thr))
    raise NotImplementedError(f"import_from_nir: NIR's {kind} has no grilly module here "
                              "(supported: Input, Output, Affine, Linear, Conv1d, Conv2d, "
                              "Flatten, AvgPool2d, SumPool2d, IF, LIF, CubaLIF, subgraphs)")


def _param(v):
    from ..parameter import Parameter
    return Parameter(gp.asarray(np.array(v, dtype=np.float32)))


def _flat(nir, graph, prefix: str = "") -> tuple:
    """A graph's nodes and edges with its subgraphs inlined (their Input/Output bypassed)."""
    nodes, edges = OrderedDict(), []
    ins, outs = {}, {}   # a subgraph's name -> the inner nodes its input feeds / output reads
    for k, n in graph.nodes.items():
        if isinstance(n, nir.NIRGraph):
            sub_nodes, sub_edges = _flat(nir, n, f"{prefix}{k}.")
            i = [e[1] for e in sub_edges if isinstance(sub_nodes.get(e[0]), nir.Input)]
            o = [e[0] for e in sub_edges if isinstance(sub_nodes.get(e[1]), nir.Output)]
            ins[prefix + k], outs[prefix + k] = i, o
            drop = {a for a, v in sub_nodes.items() if isinstance(v, (nir.Input, nir.Output))}
            nodes.update((a, v) for a, v in sub_nodes.items() if a not in drop)
            edges += [e for e in sub_edges if e[0] not in drop and e[1] not in drop]
        else:
            nodes[prefix + k] = n
    for a, b in graph.edges:
        a, b = prefix + a, prefix + b
        for src in outs.get(a, [a]):
            for dst in ins.get(b, [b]):
                edges.append((src, dst))
    return nodes, edges


def _order(nodes, edges, start: str, stateful) -> tuple:
    """A topological order from ``start`` with every edge that leaves a neuron on a cycle set
    apart (it carries the neuron's previous step, as snnTorch's V(spk[t-1])): (order, forward
    edges, recurrent edges)."""
    succ = {k: [] for k in nodes}
    for a, b in edges:
        succ[a].append(b)

    def reach(a):
        seen, todo = set(), [a]
        while todo:
            for m in succ[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen

    unreached = [k for k in nodes if k != start and k not in reach(start)]
    if unreached:
        raise ValueError(f"import_from_nir: nodes {unreached} are not reachable from the input")
    back = [(a, b) for a, b in edges if a in stateful and a in reach(b)]
    fwd = [e for e in edges if e not in back]
    indeg = {k: 0 for k in nodes}
    for _, b in fwd:
        indeg[b] += 1
    order, ready = [], [k for k in nodes if indeg[k] == 0]
    while ready:
        n = ready.pop(0)
        order.append(n)
        for a, b in fwd:
            if a == n:
                indeg[b] -= 1
                if indeg[b] == 0:
                    ready.append(b)
    if len(order) != len(nodes):
        raise NotImplementedError("import_from_nir: a cycle without a neuron (an algebraic "
                                  "loop) has no step-by-step order")
    return order, fwd, back


def _key(name: str) -> str:
    return name.replace(".", "_")   # a module name may not contain '.' (state_dict keys)


class NIRGraphModule(KeptState, Module):
    """A NIR graph as a grilly module, one time step per call: every node's inputs summed
    (NIR's semantics), in a topological order; an edge that closes a cycle (a recurrent
    connection) carries its source's output of the previous step (zeros at the first step,
    and after ``reset_state()`` / ``snn.reset(net)``)."""

    def __init__(self, modules: dict, edges: list, input_name: str = "input",
                 output_name: str = "output", nir_nodes: dict | None = None) -> None:
        super().__init__()
        self._names = list(modules)
        for name, m in modules.items():
            if m is not None:
                self.add_module(_key(name), m)
        self._input, self._output = input_name, output_name
        stateful = {k for k, m in modules.items() if isinstance(m, _Neuron)}
        self._order, fwd, self._back = _order(modules, edges, input_name, stateful)
        # a recurrent edge's source at the step before the first: zeros of its sample shape
        # (so that an Affine on it adds its bias, as snnTorch's V(0))
        nir_nodes = nir_nodes or {}
        self._shapes = {a: _node_shape(nir_nodes.get(a)) for a, _ in self._back}
        self._in_shape = _node_shape(nir_nodes.get(input_name), "output_type")
        self._edges = list(edges)
        self._preds = {n: [a for a, b in fwd if b == n] for n in modules}
        self._rec = {n: [a for a, b in self._back if b == n] for n in modules}
        self._nir_nodes = nir_nodes
        self._prev: dict = {}

    def forward(self, x):
        """One time step: the output node's value."""
        if not self._prev and self._back:
            batch = x.shape[:x.ndim - len(self._in_shape)] if self._in_shape is not None else ()
            self._prev = {a: gp.zeros((*batch, *sh), dtype=x.dtype, device=x.device)
                          for a, sh in self._shapes.items() if sh is not None}
        vals = {}
        for n in self._order:
            if n == self._input:
                vals[n] = x
                continue
            terms = [vals[a] for a in self._preds[n]] + \
                [self._prev[a] for a in self._rec[n] if a in self._prev]
            v = terms[0]
            for t in terms[1:]:
                v = v + t
            m = self._modules.get(_key(n))
            vals[n] = v if m is None else m(v)
        self._prev = {a: vals[a] for a, _ in self._back}
        return vals[self._output]

    def reset_state(self) -> None:
        """A new sequence: the recurrent edges carry zeros again."""
        self._prev = {}

    def detach_state(self) -> None:
        """Keep the recurrent edges' values, cut from the graph."""
        self._prev = {k: v.detach() for k, v in self._prev.items()}

    def _to_nir(self, nir, shape, dt: float):
        nodes = OrderedDict()
        for n in self._names:
            m = self._modules.get(_key(n))
            if m is None:
                nodes[n] = self._nir_nodes[n]
                continue
            sub = _leaf_nodes(nir, m, n, _node_shape(self._nir_nodes.get(n)), dt)[0]
            if len(sub) != 1:
                raise NotImplementedError(f"export_to_nir: {type(m).__name__} inside a "
                                          "NIRGraphModule")
            nodes[n] = sub[n]
        if shape is not None and self._input in nodes:
            nodes[self._input] = nir.Input(input_type=np.array(shape))
        graph = nir.NIRGraph(nodes=nodes, edges=list(self._edges))
        graph.infer_types()
        return graph


def _node_shape(node, which: str = "input_type"):
    if node is None or not getattr(node, which, None):
        return None
    v = next(iter(getattr(node, which).values()))
    return None if v is None else tuple(int(s) for s in np.asarray(v).reshape(-1))


def import_from_nir(graph, *, dt: float = DT) -> Module:
    """snnTorch's ``import_from_nir``: a ``nir.NIRGraph`` as a grilly module run one time step
    per call (an ``nn.Sequential`` for a chain, else a ``NIRGraphModule``); neurons keep their
    state (``init_hidden=True``; ``snn.reset(net)`` starts a new sequence)."""
    nir = _nir()
    if not isinstance(graph, nir.NIRGraph):
        raise TypeError(f"import_from_nir: graph must be a nir.NIRGraph, got "
                        f"{type(graph).__name__}")
    if not isinstance(dt, numbers.Real) or not dt > 0:
        raise ValueError(f"import_from_nir: dt must be a positive number, got {dt!r}")
    nodes, edges = _flat(nir, graph)
    ins = [k for k, n in nodes.items() if isinstance(n, nir.Input)]
    outs = [k for k, n in nodes.items() if isinstance(n, nir.Output)]
    if len(ins) != 1 or len(outs) != 1:
        raise NotImplementedError(f"import_from_nir: graphs with one Input and one Output only, "
                                  f"got {len(ins)} and {len(outs)}")
    edges = list(dict.fromkeys(edges))   # snnTorch drops duplicate edges too
    modules = OrderedDict((k, _node_module(nir, n, dt)) for k, n in nodes.items())
    stateful = {k for k, m in modules.items() if isinstance(m, _Neuron)}
    order, fwd, back = _order(modules, edges, ins[0], stateful)
    succ = {k: [b for a, b in edges if a == k] for k in modules}
    pred = {k: [a for a, b in edges if b == k] for k in modules}
    chain = not back and all(len(succ[k]) <= 1 and len(pred[k]) <= 1 for k in modules)
    if chain:
        return Sequential(OrderedDict((_key(k), modules[k]) for k in order
                                      if modules[k] is not None))
    return NIRGraphModule(modules, edges, ins[0], outs[0], nir_nodes=dict(nodes))
