"""One registry type for every pluggable family (corpus sources, fetchers, retrievers, judges, pairwise
judges, rubrics, generators, equivalence rules).

Entries are objects or lazy ``"module:attr"`` strings, imported on first use, so a family's
protocol module never imports its implementations (no import cycles) and listing names is cheap.
Third-party packages add entries through :mod:`importlib.metadata` entry points, one group per
family (``backtest.judges``, ``backtest.generators``, ...)::

    # the plugin's pyproject.toml
    [project.entry-points."backtest.generators"]
    my_system = "my_package.generator:MyGenerator"

A name nobody registered gets one clear line: the family, close matches, and the known names. A family that
says what its factories make (``makes``: a base class, or a runtime-checkable protocol) refuses, in one line,
whatever else a factory makes (:meth:`Registry.make`, :meth:`Registry.check`): a plugin's factory may return
anything, and the caller should never have to probe it.
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points
from typing import Any, Callable, Generic, TypeVar

from typing_extensions import get_protocol_members, is_protocol

from backtest.core.errors import BadInput

T = TypeVar("T")

PLUGIN_GROUP_PREFIX = "backtest."


class Registry(Generic[T]):
    """Named entries of one family; ``"module:attr"`` targets are resolved lazily and cached."""

    def __init__(
        self, family: str, group: str, builtins: dict[str, str | T] | None = None, makes: type | None = None
    ) -> None:
        self.family = family
        self.group = PLUGIN_GROUP_PREFIX + group
        self.makes = makes  # what every factory must make (None: not checked)
        self._entries: dict[str, str | T] = dict(builtins or {})
        self._plugins: dict[str, str] | None = None
        self._loaded: dict[str, T] = {}

    def add(self, name: str, target: str | T, replace: bool = False) -> None:
        """Register ``target`` (an object or a ``"module:attr"`` string) under ``name``.

        Registering a taken name without ``replace`` is a programming error (ValueError)."""
        if not replace and name in self._entries:
            raise ValueError(f"{self.family} {name!r} is already registered")
        self._entries[name] = target
        self._loaded.pop(name, None)

    def register(self, name: str, replace: bool = False) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def deco(obj: T) -> T:
            self.add(name, obj, replace=replace)
            return obj

        return deco

    def plugins(self) -> dict[str, str]:
        """Entry points of this family's group from installed distributions (name -> ``module:attr``)."""
        if self._plugins is None:
            found: dict[str, str] = {}
            for ep in entry_points(group=self.group):
                if ep.name in self._entries:
                    raise BadInput(
                        f"plugin {ep.value!r} registers {self.family} {ep.name!r}, which backtest already "
                        f"has: rename the entry point in group {self.group!r}"
                    )
                found[ep.name] = ep.value
            self._plugins = found
        return self._plugins

    def names(self) -> list[str]:
        """Every registered name, built-in and plugin, sorted."""
        return sorted({*self._entries, *self.plugins()})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._entries or name in self.plugins())

    def unknown(self, name: str, what: str | None = None) -> BadInput:
        """The error for a name not in the registry: close matches first, then every known name.
        ``what`` names the thing looked up (default: the family, e.g. "judge kind" for a config's kind)."""
        known = self.names()
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return BadInput(f"unknown {what or self.family} {name!r}{hint}; known: {', '.join(known) or 'none'}")

    def get(self, name: str) -> T:
        """The entry under ``name``, importing it on first use."""
        if name in self._loaded:
            return self._loaded[name]
        if name in self._entries:
            target = self._entries[name]
        elif name in self.plugins():
            target = self.plugins()[name]
        else:
            raise self.unknown(name)
        obj = resolve(target, f"{self.family} {name!r}") if isinstance(target, str) else target
        self._loaded[name] = obj
        return obj

    def make(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """What the factory registered as ``name`` makes from ``args`` and ``kwargs``, checked (:meth:`check`)."""
        made = self.get(name)(*args, **kwargs)  # type: ignore[operator]
        self.check(made, name)
        return made

    def check(self, made: object, name: str, what: str | None = None) -> None:
        """BadInput, one line, unless ``made`` is what this family's factories make (``makes``): a subclass of its
        base class, or an object with every member of its protocol. ``what`` names the entry (default: the
        family, e.g. "judge kind" for a config's kind)."""
        base = self.makes
        if base is None or isinstance(made, base):
            return
        label = f"{what or self.family} {name!r} made a {type(made).__name__}, not a {base.__module__}.{base.__name__}"
        if not is_protocol(base):
            raise BadInput(f"{label} subclass")
        members = sorted(get_protocol_members(base))
        lacks = [m for m in members if not hasattr(made, m)]
        raise BadInput(f"{label}: it lacks {', '.join(lacks) or 'none by name'} (needs {', '.join(members)})")


def resolve(target: str, what: str) -> T:  # type: ignore[type-var]
    """Import ``"module:attr"`` (attr may be dotted); a broken target names ``what`` and the install hint."""
    module_name, _, attr = target.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise BadInput(
            f"{what} needs {target!r}, which cannot be imported ({exc}); install the package that provides it"
        ) from None
    try:
        for part in attr.split(".") if attr else []:
            obj = getattr(obj, part)
    except AttributeError:
        raise BadInput(f"{what}: {module_name!r} has no {attr!r}") from None
    return obj  # type: ignore[return-value]
