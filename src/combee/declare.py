"""Settings declared once: type, default, bounds, help and owner, in a frozen dataclass.

A group of settings is a frozen dataclass whose fields are made with :func:`setting`; the
group's ``OWNER`` names the method or strategy that takes them (``""``: every run). From the
declaration come the validation (:func:`checked`, errors naming the setting), the run's
``config.json`` (the dataclass's fields), the resume comparison, the command line's options and
the settings table of the docs (:mod:`combee.settings`).

Dataclasses rather than pydantic models: the values are plain numbers, flags and names, the
messages must name the parameter (and on the command line the flag) in the project's own words,
and the lowest layer of the package stays free of a validation framework.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from combee.errors import ConfigError, parameter


@dataclass(frozen=True)
class Bounds:
    """What a setting's value may be, besides its type."""

    least: float | None = None
    most: float | None = None
    none: str = ""
    """What None means, when it is allowed (``"no limit"``)."""
    cli_zero_is_none: bool = False
    """On the command line, 0 stands for None (a flag cannot be given None)."""
    choices: tuple[str, ...] = ()
    """The names a text setting may take (empty: any text)."""
    above: float | None = None
    """A number the value must exceed (``0.0``: a positive number)."""


def setting(
    default: Any,
    help: str,
    *,
    least: float | None = None,
    most: float | None = None,
    none: str = "",
    cli_zero_is_none: bool = False,
    choices: tuple[str, ...] = (),
    above: float | None = None,
    flag: str | None = "",
    envvar: str | None = None,
) -> Any:
    """A declared setting: a dataclass field with its default, help and bounds. ``flag`` is
    its command-line option's name when that differs from the setting's (``None``: it has no
    flag of its own); ``envvar`` the environment variable the option falls back to."""
    bounds = Bounds(
        least=least,
        most=most,
        none=none,
        cli_zero_is_none=cli_zero_is_none,
        choices=choices,
        above=above,
    )
    shown = {"help": help, "bounds": bounds, "flag": flag, "envvar": envvar}
    return dataclasses.field(default=default, metadata=shown)


@dataclass(frozen=True)
class Declared:
    """One setting as declared: its name, type, default, help, bounds and owner."""

    name: str
    type: Any
    default: Any
    help: str
    bounds: Bounds
    owner: str
    flag: str | None = ""
    """The command-line option's name ("": the setting's own; None: no option of its own)."""
    envvar: str | None = None
    """The environment variable the option falls back to."""

    @property
    def option(self) -> str | None:
        """The option's parameter name (``timeout`` for ``timeout_s``), or None."""
        return None if self.flag is None else (self.flag or self.name)

    @property
    def option_flag(self) -> str | None:
        """The option as written on the command line (``--timeout``), or None."""
        return None if self.option is None else "--" + self.option.replace("_", "-")

    @property
    def base(self) -> type:
        """The value's type without None (``int`` for ``int | None``)."""
        args = [a for a in typing.get_args(self.type) if a is not type(None)]
        found: type = args[0] if args else self.type
        return found

    @property
    def optional(self) -> bool:
        return type(None) in typing.get_args(self.type)


class SettingsGroup:
    """Marks a settings dataclass; ``OWNER`` names what takes its settings. A group made
    directly (``AceSettings(token_budget=0)``) is checked as :func:`build` checks one: a
    ConfigError names the first setting out of bounds.

    A method or strategy takes its group whole, by a keyword named for the owner
    (``ace: AceSettings``): a setting added to the group reaches it with no other edit."""

    OWNER: ClassVar[str] = ""

    def __post_init__(self) -> None:
        kind = type(self)
        items = _DECLARED.get(kind) or _DECLARED.setdefault(kind, declared(kind))
        for item in items:
            object.__setattr__(self, item.name, checked(item, getattr(self, item.name)))


def declared(group: type[Any]) -> list[Declared]:
    """The settings of ``group`` (a settings dataclass, possibly made of several), each with
    the owner of the group that declared it."""
    hints = _hints(group)
    found = []
    for field in dataclasses.fields(group):
        owner = next(
            (
                getattr(base, "OWNER", "")
                for base in group.__mro__
                if field.name in inspect.get_annotations(base)
            ),
            "",
        )
        found.append(
            Declared(
                name=field.name,
                type=hints[field.name],
                default=field.default,
                help=field.metadata.get("help", ""),
                bounds=field.metadata.get("bounds", Bounds()),
                owner=owner,
                flag=field.metadata.get("flag", ""),
                envvar=field.metadata.get("envvar"),
            )
        )
    return found


_DECLARED: dict[type[Any], list[Declared]] = {}
"""The declarations of each group made so far, to check the next one made."""


def groups_in(settings: SettingsGroup, owners: Collection[str]) -> list[SettingsGroup]:
    """The groups of ``owners`` that ``settings`` (a dataclass composed of groups, such as
    :class:`combee.settings.RunSettings`) is made of, each made from its values."""
    found: dict[str, SettingsGroup] = {}
    for group in type(settings).__mro__:  # a group's subclass before the group
        owner = getattr(group, "OWNER", "")
        if owner in owners and owner not in found and issubclass(group, SettingsGroup):
            found[owner] = group(**{name: getattr(settings, name) for name in settings_of(group)})
    return list(found.values())


def offered(groups: Iterable[SettingsGroup]) -> dict[str, Any]:
    """What a factory is offered of ``groups``: each group whole, by its owner's name, and each
    setting by its own name (for a factory that takes plain keywords)."""
    found: dict[str, Any] = {}
    for group in groups:
        found.update({name: getattr(group, name) for name in settings_of(group)})
        found[group.OWNER] = group
    return found


def settings_of(option: Any) -> list[str]:
    """The settings an option carries: those of a settings group (or its class), none for
    another value."""
    kind = option if isinstance(option, type) else type(option)
    if issubclass(kind, SettingsGroup) and dataclasses.is_dataclass(kind):
        return [field.name for field in dataclasses.fields(kind)]
    return []


def _hints(group: type[Any]) -> dict[str, Any]:
    """The field types of ``group``; a type imported for type checkers alone (a heavy module
    the command line should not load) is read as ``Any``."""
    missing: dict[str, Any] = {}
    while True:
        try:
            return typing.get_type_hints(group, localns=missing)
        except NameError as error:
            if error.name is None or error.name in missing:
                raise
            missing[error.name] = Any


def checked(item: Declared, value: Any) -> Any:
    """``value`` if ``item`` may take it, else a ConfigError naming the setting."""
    if value is None:
        if item.optional:
            return None
        raise ConfigError(f"must be given (got None){_range(item)}", setting=item.name)
    base = item.base
    if base is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"must be True or False (got {value!r})", setting=item.name)
        return value
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if base is int:
        if not number or not isinstance(value, int):
            raise ConfigError(
                f"must be a whole number{_range(item)} (got {value!r})", setting=item.name
            )
    elif base is float:
        if not number or not math.isfinite(value):
            raise ConfigError(
                f"must be a finite number{_range(item)} (got {value!r})", setting=item.name
            )
        value = float(value)
    elif base is str:
        if not isinstance(value, str):
            raise ConfigError(f"must be a text (got {value!r})", setting=item.name)
        if item.bounds.choices and value not in item.bounds.choices:
            names = " | ".join(item.bounds.choices)
            raise ConfigError(f"must be one of {names} (got {value!r})", setting=item.name)
        return value
    least, most = item.bounds.least, item.bounds.most
    show = (lambda x: str(int(x))) if base is int else str
    if least is not None and value < least:
        kind = "a whole number of at least" if base is int else "at least"
        raise ConfigError(f"must be {kind} {show(least)} (got {value!r})", setting=item.name)
    above = item.bounds.above
    if above is not None and value <= above:
        raise ConfigError(f"must be more than {show(above)} (got {value!r})", setting=item.name)
    if most is not None and value > most:
        raise ConfigError(f"must be at most {show(most)} (got {value!r})", setting=item.name)
    return value


def _range(item: Declared, kind: str = " a number") -> str:
    """`` of at least 1`` after a kind of value (`` a whole number``), `` at least 1`` alone."""
    least, most, above = item.bounds.least, item.bounds.most, item.bounds.above
    show = (lambda x: str(int(x))) if item.base is int else str
    of = " of" if kind else ""
    if least is not None and most is not None:
        text = f" from {show(least)} to {show(most)}"
    elif least is not None:
        text = f"{of} at least {show(least)}"
    elif above is not None:
        text = f"{of} more than {show(above)}"
        text += "" if most is None else f" and at most {show(most)}"
    elif most is not None:
        text = f"{of} at most {show(most)}"
    else:
        text = ""
    if item.optional and item.bounds.none:
        text += f", or None for {item.bounds.none}"
    return text


def build(group: type[SettingsGroup], given: Mapping[str, Any], *, where: str) -> Any:
    """An instance of ``group`` from ``given`` (each checked; the rest at their defaults); a
    name ``group`` does not declare is an error saying which settings ``where`` takes."""
    items = {item.name: item for item in declared(group)}
    unknown = sorted(set(given) - set(items))
    if unknown:
        close = [n for n in items if unknown[0].replace("-", "_") in n or n in unknown[0]]
        hint = f"; did you mean {parameter(close[0])}?" if close else ""
        raise ConfigError(
            f"is not a setting of {where}{hint} (see docs/settings.md)", setting=unknown[0]
        )
    return group(**given)  # a SettingsGroup checks each value as it is made
