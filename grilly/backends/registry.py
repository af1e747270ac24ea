"""The backend registry: pluggy for discovery, a plain dict per device for the hot path.

Plugins are isolated: one that fails to import, whose ``grilly_backends`` raises, whose backend
reuses a taken name, or whose ``devices()`` raises is left out with a warning and recorded in
``registry.problems`` (``grilly info`` shows them); every other backend keeps working."""
from __future__ import annotations

import logging
import os
import threading
import types
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


def _plugin_name(plugin) -> str:
    """A readable default name for a plugin registered without one (pluggy's default is the
    object's id): the module's name, or the object's class and address."""
    if isinstance(plugin, types.ModuleType):
        return plugin.__name__
    cls = type(plugin) if not isinstance(plugin, type) else plugin
    return f"{cls.__module__}.{cls.__qualname__} at {id(plugin):#x}"


def backend_name_problem(name) -> str | None:
    """Why ``name`` cannot name a backend (None when it can): devices are named ``NAME`` or
    ``NAME:INDEX``, so a backend name is a non-empty string without ':' or spaces."""
    if not isinstance(name, str) or not name:
        return f"backend name {name!r} is not a non-empty string"
    if ":" in name or name != name.strip() or any(c.isspace() for c in name):
        return (f"backend name {name!r} is not valid: devices are named NAME or NAME:INDEX, so a "
                "backend name may hold no ':' and no spaces")
    return None


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
        self._named: dict = {}   # a device name asked for -> its Device (until a rebuild)

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
            who = impl.plugin_name
            try:
                got = impl.function()
            except Exception as e:
                self._problem(who, f"grilly_backends() raised {type(e).__name__}: {e}")
                continue
            if isinstance(got, Backend) or not isinstance(got, (list, tuple, type(None))):
                self._problem(who, "grilly_backends() must return a list of Backend objects, got "
                                   f"{type(got).__name__}")
                continue
            good = []
            for b in got or ():
                if not isinstance(b, Backend):
                    what = (f"the class {b.__name__} (an instance is needed)"
                            if isinstance(b, type) else f"a {type(b).__name__}")
                    self._problem(who, "grilly_backends() returned "
                                       f"{what}, expected grilly.backends.Backend instances")
                    continue
                bad = backend_name_problem(b.name)
                if bad is not None:
                    self._problem(who, bad)
                    continue
                good.append(b)
            out.append((who, good))
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
            if self.pm.is_registered(plugin):
                raise ValueError(f"register: plugin {self.pm.get_name(plugin)!r} is already "
                                 "registered; unregister it first")
            if name is not None and self.pm.has_plugin(name):
                raise ValueError(f"register: a plugin named {name!r} is already registered "
                                 f"({self.pm.get_plugin(name)!r}); unregister it or pick another "
                                 "name")
            self.pm.register(plugin, name=name or _plugin_name(plugin))
            who = self.pm.get_name(plugin)
            impl = getattr(plugin, "grilly_backends", None)
            try:
                got = impl() if callable(impl) else None
                names = [b.name for b in got or ()] if isinstance(got, (list, tuple)) else []
            except Exception:   # recorded (and warned about) by the rebuild below
                names = []
            problem = next((p for p in map(backend_name_problem, names) if p), None)
            if problem is None:
                dup = next((n for n in names if names.count(n) > 1), None)
                taken = [n for n in names if n in self._origin and self._origin[n] != who]
                if dup is not None:
                    problem = f"register: plugin {who!r} provides two backends named {dup!r}"
                elif taken:
                    problem = (f"register: backend {taken[0]!r} of plugin {who!r} is already "
                               f"provided by {self._origin[taken[0]]!r}; unregister that first")
            if problem is not None:
                self.pm.unregister(plugin)
                raise ValueError(problem if problem.startswith("register:")
                                 else f"register: plugin {who!r}: {problem}")
            try:
                self.rebuild()
            except BaseException:   # the tables as they were: a half-built rebuild helps no one
                self.pm.unregister(plugin)
                self.rebuild()
                raise

    def unregister(self, plugin=None, name: str | None = None) -> None:
        """Remove a plugin and rebuild the dispatch tables."""
        with self._lock:
            if plugin is None and name is None:
                raise ValueError("unregister: name the plugin (or pass the plugin object)")
            known = (self.pm.is_registered(plugin) if plugin is not None
                     else self.pm.has_plugin(name))
            if not known:
                raise ValueError(f"unregister: {name if plugin is None else plugin!r} is not a "
                                 "registered plugin")
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
        self.overridden = {}
        tables, devices = {}, {}
        for name, b in list(backends.items()):   # a backend whose hooks misbehave is left out
            table = self._kernel_table(b, origin[name])
            devs = self.devices_of(b) if table is not None else None
            if devs and [id(d) for d in devs] != [id(d) for d in self.devices_of(b)]:
                self._problem(f"backend {name}", "devices() returned new Device objects on a "
                              "second call; create them once and return the same ones every time "
                              "(the registry fills their kernels in place)")
                devs = None
            if devs is not None and any(not isinstance(d, Device) or d.backend is not b
                                        for d in devs):
                self._problem(f"backend {name}", "devices() must return Device objects "
                              "made with Device(backend, index) of this backend")
                devs = None
            if devs is None:
                del backends[name]
                continue
            tables[name], devices[name] = table, devs
        for b in self.backends.values():
            if b.name not in backends or self.backends.get(b.name) is not backends[b.name]:
                for d in self.devices_of(b):
                    if isinstance(d, Device):
                        d.kernels.clear()
        for name, b in backends.items():
            for d in devices[name]:
                d.kernels.clear()
                d.kernels.update(tables[name])
                if self.checked:   # after update: a device table may wrap what it stores
                    for op, fn in list(d.kernels.items()):
                        d.kernels[op] = checked.wrap(b, d, op, fn)
        self.backends, self._origin = backends, origin
        self._named = {}
        if self._default is not None and self._default.backend.name not in backends:
            self._default = None

    def _kernel_table(self, b: Backend, owner: str) -> dict | None:
        """``b``'s kernels plus the ``grilly_kernels`` of every plugin, earliest first; another
        plugin may add kernels, but replaces one only through ``overrides`` (logged). None (and
        a problem recorded) when ``b.kernels()`` raises or returns no mapping; a kernel that is
        not callable is left out (a problem)."""
        try:
            table = dict(b.kernels())
        except Exception as e:
            self._problem(f"backend {b.name}", f"kernels() raised {type(e).__name__}: {e}")
            return None
        for op in [op for op, fn in table.items() if not callable(fn)]:
            self._problem(f"backend {b.name} kernel {op!r}", f"is a {type(table[op]).__name__}, "
                          "not a callable")
            del table[op]
        source = dict.fromkeys(table, owner)
        for impl in self.pm.hook.grilly_kernels.get_hookimpls():
            who = impl.plugin_name
            try:
                extra = impl.function(backend=b.name) or {}
                items = list(extra.items())
            except Exception as e:
                self._problem(who, f"grilly_kernels(backend={b.name!r}) raised "
                                   f"{type(e).__name__}: {e}")
                continue
            for op, fn in items:
                if not callable(fn):
                    self._problem(f"{who} kernel {op!r}", f"is a {type(fn).__name__}, not a "
                                  "callable")
                    continue
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
        d = self._named.get(spec) if type(spec) is str else None
        if d is not None:   # (gp.synchronize("vulkan") and device= arguments ask on every call)
            return d
        d = self._device(spec)
        self._named[spec] = d
        return d

    def _device(self, spec) -> Device:
        if not isinstance(spec, str):
            raise ValueError(f"device: expected a Device or a name such as 'cpu', got {spec!r}")
        name, _, idx = spec.partition(":")
        b = self.backends.get(name)
        if b is None:
            why = self.problems.get(f"backend {name}")
            why = f" (backend {name!r} was left out: {why})" if why else ""
            raise ValueError(f"device: unknown device {spec!r}{why}; available: "
                             f"{[str(d) for d in self.devices()]}")
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
            with self._lock:
                # kept only where no set_default_device came meanwhile (another thread's
                # choice made while this one computed the automatic default is not undone)
                if self._default is None:
                    self._default = d
                d = self._default
        return d

    def set_default_device(self, device) -> None:
        """Set the process-wide default device (every thread's, outside a device_scope)."""
        d = None if device is None else self.device(device)
        with self._lock:
            self._default = d

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
