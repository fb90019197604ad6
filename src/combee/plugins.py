"""Open registries: strategies, tasks and methods by name (a neutral helper, like errors).

A name maps to a factory (a class or a function) called with keyword options. Names come from
three places, in this order of precedence: :meth:`Registry.register` from Python, the built-ins,
and installed plugins through an entry point group (``combee.strategies``, ``combee.tasks``,
``combee.methods``), e.g. in a plugin's ``pyproject.toml``::

    [project.entry-points."combee.strategies"]
    mine = "my_package.strategies:MyStrategy"
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Collection
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from combee.declare import settings_of
from combee.errors import ConfigError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger(__name__)


class Registry(Generic[T]):
    """Factories of ``T`` by name; ``kind`` (``strategy``) and ``setting`` (``strategy``) only
    shape error messages."""

    def __init__(self, kind: str, group: str, *, setting: str, hint: str = "") -> None:
        self.kind = kind
        self.hint = hint
        self.group = group
        self.setting = setting
        self._factories: dict[str, Callable[..., T]] = {}
        self._plugins_loaded = False

    def register(self, name: str, factory: Callable[..., T] | None = None) -> Any:
        """Register ``factory`` under ``name``; without a factory, a decorator.

        A later registration under the same name replaces the earlier one.
        """
        if not name or not name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(
                f"{name!r} is not a usable {self.kind} name (letters, digits, - and _)",
                setting="name",
            )

        def add(chosen: F) -> F:
            self._factories[name] = chosen
            return chosen

        if factory is None:
            return add
        add(factory)
        return factory

    def unregister(self, name: str) -> None:
        self._factories.pop(name, None)

    def names(self) -> list[str]:
        """Every name this registry knows, in registration order, plugins last."""
        self._load_plugins()
        return list(self._factories)

    def __contains__(self, name: object) -> bool:
        if name not in self._factories:  # a plugin never shadows a name known here
            self._load_plugins()
        return name in self._factories

    def factory(self, name: str) -> Callable[..., T]:
        """The factory registered as ``name``; ConfigError naming the choices otherwise.

        Installed plugins are looked for only when the name is not known here (reading every
        installed package's entry points costs a noticeable share of a short run's start-up).
        """
        if name not in self._factories:
            self._load_plugins()
        try:
            return self._factories[name]
        except KeyError:
            raise ConfigError(
                f"{name!r}: unknown {self.kind}; choose one of "
                f"{', '.join(self.names())}{self.hint}",
                setting=self.setting,
            ) from None

    def create(self, name: str, *, insist: Collection[str] = (), **options: Any) -> T:
        """Call the factory of ``name`` with the options it accepts (others are ignored, so a
        plugin need not take every setting a run has; one of ``insist`` it does not take is an
        error)."""
        return call_with_accepted(
            self.factory(name), options, insist=insist, name=f"{self.kind} {name!r}"
        )

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for entry in entry_points(group=self.group):
            if entry.name in self._factories:
                continue
            try:
                self._factories[entry.name] = entry.load()
            except Exception as error:  # a broken plugin must not break the built-ins
                log.warning(
                    "%s plugin %r (%s) failed to load: %s",
                    self.kind,
                    entry.name,
                    entry.value,
                    error,
                )


def call_with_accepted(
    factory: Callable[..., T],
    options: dict[str, Any],
    *args: Any,
    insist: Collection[str] = (),
    name: str = "",
) -> T:
    """``factory(*args, **options)``, keeping only the keywords its signature accepts; a
    keyword of ``insist`` (settings the user chose) that it does not accept, alone or in a
    settings group it accepts (:mod:`combee.declare`), is a ConfigError saying that ``name``
    does not take it."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return factory(*args, **options)
    parameters = list(signature.parameters.values())
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return factory(*args, **options)
    accepted = {
        p.name
        for p in parameters[len(args) :]
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }
    carried = {name for key in accepted for name in settings_of(options.get(key))}
    refused = sorted(set(insist) - accepted - carried)
    if refused:
        raise ConfigError(
            f"is set, but {name or 'this choice'} does not take it (leave it at its default)",
            setting=refused[0],
        )
    return factory(*args, **{k: v for k, v in options.items() if k in accepted})
