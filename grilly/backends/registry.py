"""The backend registry: pluggy for discovery, a plain dict per device for the hot path.

Plugins are isolated: one that fails to import, whose ``grilly_backends`` raises, whose backend
reuses a taken name, or whose ``devices()`` raises is left out with a warning and recorded in
``registry.problems`` (``grilly info`` shows them); every other backend keeps working."""
from __future__ import annotations

import logging
import os
import threading
import warnings
from importlib.metadata import entry_points

import pluggy

from . import checked, hookspecs
from .base import Backend, Device

ENTRY_POINT_GROUP = "grilly.backends"
log = logging.getLogger("grilly.backends")


class Overrides(dict):
    """Kernels a plugin returns from ``grilly_kernels`` to replace kernels another plugin
    provides: ``return grilly.backends.overrides({"matmul": my_matmul})``. A plain dict may only
    add kernels a backend lacks; replacing one without this flag is refused (and reported)."""


def overrides(kernels: dict) -> Overrides:
    """Mark ``kernels`` as deliberate replacements of existing kernels."""
    return Overrides(kernels)


class Registry:
    """Holds the plugin manager and resolves plugins into per-device kernel tables."""

    def __init__(self):
        self.pm = pluggy.PluginManager("grilly")
        self.pm.add_hookspecs(hookspecs)
        self.backends: dict[str, Backend] = {}
        self._loaded = False
        self._loading = False
        self._default: Device | None = None
        # one lock for loading and (un)registering: threads making their first grilly call at
        # once must all wait for the whole load, not see a half-built table (issue 10)
        self._lock = threading.RLock()
        self._scope = threading.local()   # device_scope's stack: per thread
        self.problems: dict[str, str] = {}   # plugin or backend -> what went wrong
        self._origin: dict[str, str] = {}    # backend name -> the plugin that provides it
        # (backend, op) -> (plugin that replaced the kernel, plugin whose kernel it replaced)
        self.overridden: dict[tuple, tuple] = {}
        self.checked = os.environ.get("GRILLY_CHECK", "").strip() not in ("", "0")

    def load(self) -> None:
        """Discover entry-point plugins once (the built-in backends come this way)."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return   # loaded meanwhile, or a plugin of this very load asks (same thread)
            self._loading = True
            try:
                self._load()
            finally:
                self._loading = False
            self._loaded = True

    def _problem(self, who: str, what: str) -> None:
        if self.problems.get(who) != what:   # (the tables are rebuilt more than once)
            warnings.warn(f"grilly: plugin {who}: {what}; it is left out", RuntimeWarning, stacklevel=3)
        self.problems[who] = what

    def _load(self) -> None:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            who = f"{ep.name} ({ep.dist.name if ep.dist else ep.value})"
            try:
                plugin = ep.load()
            except Exception as e:   # a broken plugin must not take the others down
                self._problem(who, f"import failed: {type(e).__name__}: {e}")
                continue
            if self.pm.is_registered(plugin):
                continue
            self.pm.register(plugin, name=who)
        found = set(self._origin) | {b.name for _, bs in self._provided() for b in bs}
        # a source tree that was never pip-installed has no entry points: register the built-ins
        if "cpu" not in found:
            from .cpu_numba import plugin as cpu_plugin

            self.pm.register(cpu_plugin, name="grilly.cpu_numba")
        if "vulkan" not in found:
            from .vulkan import plugin as vulkan_plugin

            self.pm.register(vulkan_plugin, name="grilly.vulkan")
        self.rebuild()

    def _provided(self) -> list:
        """(plugin name, [Backend]) per plugin, earliest registered first; a plugin whose
        ``grilly_backends`` raises is recorded as a problem and provides nothing."""
        out = []
        for impl in self.pm.hook.grilly_backends.get_hookimpls():
            try:
                out.append((impl.plugin_name, list(impl.function() or ())))
            except Exception as e:
                self._problem(impl.plugin_name, f"grilly_backends() raised {type(e).__name__}: {e}")
        return out

    def devices_of(self, b: Backend) -> list[Device]:
        """``b.devices()``, or none (recorded in ``problems``) when it raises."""
        try:
            return list(b.devices())
        except Exception as e:
            if f"backend {b.name}" not in self.problems:
                self._problem(f"backend {b.name}", f"devices() raised {type(e).__name__}: {e}")
            return []

    def register(self, plugin, name: str | None = None) -> None:
        """Register a plugin at run time and rebuild the dispatch tables; a backend name that
        another plugin already provides is a ValueError naming both."""
        self.load()
        with self._lock:
            self.pm.register(plugin, name=name)
            who = self.pm.get_name(plugin)
            impl = getattr(plugin, "grilly_backends", None)
            try:
                names = [b.name for b in (impl() or ())] if callable(impl) else []
            except Exception:   # recorded (and warned about) by the rebuild below
                names = []
            taken = [n for n in names if n in self._origin and self._origin[n] != who]
            if taken:
                self.pm.unregister(plugin)
                raise ValueError(f"register: backend {taken[0]!r} of plugin {who!r} is already "
                                 f"provided by {self._origin[taken[0]]!r}; unregister that first")
            self.rebuild()

    def unregister(self, plugin=None, name: str | None = None) -> None:
        """Remove a plugin and rebuild the dispatch tables."""
        with self._lock:
            self.pm.unregister(plugin, name=name)
            self.rebuild()

    def rebuild(self) -> None:
        """Resolve every plugin's backends and kernels into each device's ``kernels`` dict."""
        with self._lock:
            self._rebuild()

    def _rebuild(self) -> None:
        backends: dict[str, Backend] = {}
        origin: dict[str, str] = {}
        for who, lst in self._provided():
            for b in lst:
                if b.name in backends:   # the first plugin to provide a name keeps it
                    self._problem(who, f"backend name {b.name!r} is already provided by "
                                       f"{origin[b.name]!r}")
                    continue
                backends[b.name], origin[b.name] = b, who
        for b in self.backends.values():
            if b.name not in backends:
                for d in self.devices_of(b):
                    d.kernels.clear()
        self.overridden = {}
        for name, b in backends.items():
            table = self._kernel_table(b, origin[name])
            for d in self.devices_of(b):
                d.kernels.clear()
                d.kernels.update(table)
                if self.checked:   # after update: a device table may wrap what it stores
                    for op, fn in list(d.kernels.items()):
                        d.kernels[op] = checked.wrap(b, d, op, fn)
        self.backends, self._origin = backends, origin
        if self._default is not None and self._default.backend.name not in backends:
            self._default = None

    def _kernel_table(self, b: Backend, owner: str) -> dict:
        """``b``'s kernels plus the ``grilly_kernels`` of every plugin, earliest first; another
        plugin may add kernels, but replaces one only through ``overrides`` (logged)."""
        table = dict(b.kernels())
        source = dict.fromkeys(table, owner)
        for impl in self.pm.hook.grilly_kernels.get_hookimpls():
            who = impl.plugin_name
            try:
                extra = impl.function(backend=b.name) or {}
            except Exception as e:
                self._problem(who, f"grilly_kernels(backend={b.name!r}) raised "
                                   f"{type(e).__name__}: {e}")
                continue
            for op, fn in extra.items():
                was = source.get(op)
                if was is not None and was != who:
                    if not isinstance(extra, Overrides):
                        self._problem(f"{who} kernel {op!r}", f"would replace the {b.name!r} "
                                      f"kernel of {was!r}; return grilly.backends.overrides"
                                      "({...}) to replace it deliberately")
                        continue
                    log.info("grilly: plugin %s overrides kernel %r of backend %r (was %s)",
                             who, op, b.name, was)
                    self.overridden[(b.name, op)] = (who, was)
                table[op], source[op] = fn, who
        return table

    def set_checked(self, on: bool = True) -> None:
        """Turn checked mode (every kernel result validated; also ``GRILLY_CHECK=1``) on or off."""
        with self._lock:
            self.load()
            self.checked = bool(on)
            self.rebuild()

    def devices(self) -> list[Device]:
        self.load()
        return [d for b in self.backends.values() for d in self.devices_of(b)]

    def device(self, spec) -> Device:
        """The device named by ``spec`` (a Device, ``"cpu"``, ``"vulkan"``, ``"vulkan:1"``)."""
        self.load()
        if isinstance(spec, Device):
            return spec
        if not isinstance(spec, str):
            raise ValueError(f"device: expected a Device or a name such as 'cpu', got {spec!r}")
        name, _, idx = spec.partition(":")
        b = self.backends.get(name)
        if b is None:
            raise ValueError(
                f"device: unknown device {spec!r}; available: {[str(d) for d in self.devices()]}")
        devs = self.devices_of(b)
        if not devs:
            why = (getattr(b, "unavailable_reason", "") or self.problems.get(f"backend {name}")
                   or "it found no device")
            raise ValueError(f"device: backend {name!r} has no device ({why})")
        if not idx:
            return max(devs, key=lambda d: getattr(d, "rank", 0))
        try:
            return devs[int(idx)]
        except (ValueError, IndexError):
            raise ValueError(f"device: {spec!r} is not a device; {name} has {len(devs)}") from None

    def default_device(self) -> Device:
        """The default device: this thread's innermost device_scope, else set_default_device,
        else $GRILLY_DEVICE, else the best device."""
        stack = getattr(self._scope, "stack", None)
        if stack:
            return stack[-1]
        d = self._default
        if d is None:
            self.load()
            env = os.environ.get("GRILLY_DEVICE", "").strip()
            if env:
                d = self.device(env)
            else:
                devs = self.devices()
                d = max(devs, key=lambda d: (d.backend.priority + getattr(d, "rank", 0)))
            self._default = d   # (threads racing here compute the same device)
        return d

    def set_default_device(self, device) -> None:
        """Set the process-wide default device (every thread's, outside a device_scope)."""
        self._default = None if device is None else self.device(device)

    def push_scope(self, device) -> Device:
        """Make ``device`` this thread's default until the matching pop_scope."""
        d = self.device(device)
        stack = getattr(self._scope, "stack", None)
        if stack is None:
            stack = self._scope.stack = []
        stack.append(d)
        return d

    def pop_scope(self) -> None:
        """End this thread's innermost device scope."""
        self._scope.stack.pop()


registry = Registry()
