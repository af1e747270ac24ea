"""SpikingJelly's ``activation_based.monitor`` (also snnTorch's ``functional.probe``): record a
net's layer outputs, inputs, attributes or gradients through grilly.nn's module hooks.

    mon = snn.monitor.OutputMonitor(net, snn.LIFNode)   # every LIFNode of net
    net(x)
    mon.records, mon["layer_name"], mon.monitored_layers
    mon.clear_recorded_data(); mon.disable(); mon.enable(); mon.remove_hooks()
"""
from __future__ import annotations

from typing import Callable

__all__ = ["BaseMonitor", "OutputMonitor", "InputMonitor", "AttributeMonitor",
           "GradInputMonitor", "GradOutputMonitor"]


def _unpack_len1_tuple(x):
    return x[0] if isinstance(x, tuple) and len(x) == 1 else x


def _identity(x):
    return x


class BaseMonitor:
    """The records of the monitored layers (``records`` in call order, ``monitor[name]`` one
    layer's, ``monitor[i]`` the i-th), their hooks, and switching recording on and off."""

    def __init__(self) -> None:
        self.hooks = []
        self.monitored_layers = []
        self.records = []
        self.name_records_index = {}
        self._enable = True

    def __getitem__(self, i):
        if isinstance(i, int):
            return self.records[i]
        if isinstance(i, str):
            if i not in self.name_records_index:
                raise KeyError(f"{type(self).__name__}: no monitored layer {i!r}; monitored: "
                               f"{self.monitored_layers}")
            return [self.records[k] for k in self.name_records_index[i]]
        raise TypeError(f"{type(self).__name__}: index with an int (a record) or a layer name "
                        f"(str), got {type(i).__name__}")

    def _monitor_modules(self, net, instance) -> list:
        if instance is None:
            instance = type(net)
        if not (isinstance(instance, type) or (isinstance(instance, tuple)
                                               and all(isinstance(c, type) for c in instance))):
            raise TypeError(f"{type(self).__name__}: instance must be a module class or a tuple "
                            f"of them, got {type(instance).__name__}")
        mods = [(n, m) for n, m in net.named_modules() if isinstance(m, instance)]
        self.monitored_layers.extend(n for n, _ in mods)
        self.name_records_index.update((n, []) for n, _ in mods)
        return mods

    def _record(self, name: str, value) -> None:
        self.name_records_index[name].append(len(self.records))
        self.records.append(value)

    def clear_recorded_data(self) -> None:
        """Forget every record (the hooks stay)."""
        self.records.clear()
        for v in self.name_records_index.values():
            v.clear()

    def enable(self) -> None:
        """Record again."""
        self._enable = True

    def disable(self) -> None:
        """Stop recording (the hooks stay)."""
        self._enable = False

    def is_enable(self) -> bool:
        """Whether the monitor records."""
        return self._enable

    def remove_hooks(self) -> None:
        """Remove the hooks from the net: nothing is recorded any more."""
        for h in self.hooks:
            h.remove()
        self.hooks.clear()

    def close(self) -> None:
        """Stop recording and remove the hooks."""
        self.disable()
        self.remove_hooks()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __del__(self):
        self.close()


class OutputMonitor(BaseMonitor):
    """Records ``function_on_output(output)`` of every module of ``net`` that is an
    ``instance`` (a class or tuple of classes; default: ``type(net)``) after each forward."""

    def __init__(self, net, instance=None, function_on_output: Callable = _identity) -> None:
        super().__init__()
        self.function_on_output = function_on_output
        for name, m in self._monitor_modules(net, instance):
            self.hooks.append(m.register_forward_hook(self._hook(name)))

    def _hook(self, name):
        def hook(module, args, output):
            if self.is_enable():
                self._record(name, self.function_on_output(_unpack_len1_tuple(output)))
        return hook

    create_hook = _hook


class InputMonitor(BaseMonitor):
    """Records ``function_on_input(input)`` (the positional inputs, one unpacked) of every
    monitored module before each forward."""

    def __init__(self, net, instance=None, function_on_input: Callable = _identity) -> None:
        super().__init__()
        self.function_on_input = function_on_input
        for name, m in self._monitor_modules(net, instance):
            self.hooks.append(m.register_forward_pre_hook(self._hook(name)))

    def _hook(self, name):
        def hook(module, args):
            if self.is_enable():
                self._record(name, self.function_on_input(_unpack_len1_tuple(args)))
        return hook

    create_hook = _hook


class AttributeMonitor(BaseMonitor):
    """Records ``function_on_attribute(getattr(module, attribute_name))`` of every monitored
    module, before (``pre_forward=True``) or after each forward (e.g. a neuron's ``v``)."""

    def __init__(self, attribute_name: str, pre_forward: bool, net, instance=None,
                 function_on_attribute: Callable = _identity) -> None:
        super().__init__()
        if not isinstance(attribute_name, str):
            raise TypeError(f"AttributeMonitor: attribute_name must be a str, got "
                            f"{type(attribute_name).__name__}")
        self.attribute_name = attribute_name
        self.function_on_attribute = function_on_attribute
        for name, m in self._monitor_modules(net, instance):
            reg = m.register_forward_pre_hook if pre_forward else m.register_forward_hook
            self.hooks.append(reg(self._hook(name)))

    def _hook(self, name):
        def hook(module, *args):
            if self.is_enable():
                self._record(name, self.function_on_attribute(getattr(module,
                                                                      self.attribute_name)))
        return hook

    create_hook = _hook


class GradInputMonitor(BaseMonitor):
    """Records ``function_on_grad_input(grad_input)`` (the gradients of the module's inputs,
    one unpacked) of every monitored module during backward."""

    def __init__(self, net, instance=None, function_on_grad_input: Callable = _identity) -> None:
        super().__init__()
        self.function_on_grad_input = function_on_grad_input
        for name, m in self._monitor_modules(net, instance):
            self.hooks.append(m.register_full_backward_hook(self._hook(name)))

    def _hook(self, name):
        def hook(module, grad_input, grad_output):
            if self.is_enable():
                self._record(name, self.function_on_grad_input(_unpack_len1_tuple(grad_input)))
        return hook

    create_hook = _hook


class GradOutputMonitor(BaseMonitor):
    """Records ``function_on_grad_output(grad_output)`` (the gradients of the module's
    outputs, one unpacked) of every monitored module during backward."""

    def __init__(self, net, instance=None,
                 function_on_grad_output: Callable = _identity) -> None:
        super().__init__()
        self.function_on_grad_output = function_on_grad_output
        for name, m in self._monitor_modules(net, instance):
            self.hooks.append(m.register_full_backward_hook(self._hook(name)))

    def _hook(self, name):
        def hook(module, grad_input, grad_output):
            if self.is_enable():
                self._record(name, self.function_on_grad_output(
                    _unpack_len1_tuple(grad_output)))
        return hook

    create_hook = _hook
