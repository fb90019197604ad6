"""One command-line option per declared setting (:mod:`combee.settings`), made from the
declaration: its flag, type, default and help; a setting added there is a flag here."""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

import typer

from combee.declare import Declared
from combee.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


def with_setting_options(items: Sequence[Declared], *, hidden: bool = False) -> Callable[[F], F]:
    """Give ``command`` (which takes ``**options``) one option per item of ``items`` that has
    one, named as its declaration says (``hidden``: left out of the help, for settings a
    command only refuses)."""
    return with_parameters(
        [
            inspect.Parameter(
                item.option,
                inspect.Parameter.KEYWORD_ONLY,
                default=setting_default(item),
                annotation=setting_annotation(item, hidden=hidden),
            )
            for item in items
            if item.option is not None
        ]
    )


def with_parameters(added: Sequence[inspect.Parameter]) -> Callable[[F], F]:
    """Give ``command`` (which takes ``**options``) the options ``added``, as if its signature
    listed them; their values reach it in ``options``."""

    def decorate(command: F) -> F:
        signature = inspect.signature(command)
        # The command's own annotations resolved (its module may postpone them as strings): a
        # signature given as __signature__ is read as it is.
        hints = typing.get_type_hints(command, include_extras=True)
        kept = [
            p.replace(annotation=in_panel(hints.get(p.name, p.annotation)))
            for p in signature.parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        command.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
        command.__annotations__ = {
            **{
                k: v for k, v in command.__annotations__.items() if k not in ("settings", "options")
            },
            **{p.name: p.annotation for p in (*kept, *added)},
        }
        return command

    return decorate


def settings_from_options(items: Sequence[Declared], values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings as :func:`combee.train` takes them, from ``values`` by option name (0 back
    to None where the flag uses 0 for None); a setting with no option of its own is left out."""
    found = {}
    for item in items:
        if item.option is None:
            continue
        value = values[item.option]
        zero_is_none = item.bounds.cli_zero_is_none
        if zero_is_none and value == 0:
            value = None
        elif zero_is_none and item.bounds.least is not None and value < item.bounds.least:
            raise ConfigError(
                f"must be a whole number of at least {item.bounds.least:g}, or 0 for "
                f"{item.bounds.none or 'none'} (got {value})",
                setting=item.name,
            )
        found[item.name] = value
    return found


PANELS = {
    "": "Training",
    "endpoint": "Endpoint",
    "ace": "ACE method",
    "gepa": "GEPA method",
    "combee": "Strategy combee",
    "topk": "Strategy topk",
    "auto": "Batch size auto",
    "learn": "Traces",
    "serve": "Gateway",
}
"""The help panel of a declared setting's flag, by the owner of its group."""


def in_panel(annotation: Any, panel: str | None = None) -> Any:
    """``annotation`` (``Annotated[kind, typer.Option(...)]``) shown in the help panel
    ``panel`` (``None``: where it was), a switch without a ``<bool>`` type beside it; any
    other annotation as it is."""
    if typing.get_origin(annotation) is not Annotated:
        return annotation
    kind, *extras = typing.get_args(annotation)
    if len(extras) != 1 or not isinstance(extras[0], typer.models.OptionInfo):
        return annotation
    info = copy.copy(extras[0])
    if panel is not None:
        info.rich_help_panel = panel
    if bool in (kind, *typing.get_args(kind)):
        info.metavar = ""
    return Annotated[kind, info]


def setting_default(item: Declared) -> Any:
    """The default of ``item``'s flag (0 where the flag takes 0 for None)."""
    if item.bounds.cli_zero_is_none and item.default is None:
        return 0
    return item.default


def option_help(item: Declared) -> str:
    """The help of ``item``'s flag: whose setting it is, its help and what None means."""
    help_text = item.help
    if item.bounds.cli_zero_is_none:
        help_text += f" (0: {item.bounds.none or 'none'})"
    elif item.optional and item.bounds.none:
        help_text += f" (default: {item.bounds.none})"
    owners = {"": "", "auto": "batch size auto: ", "endpoint": "", "learn": ""}
    owner = owners.get(item.owner, f"{item.owner}: ")
    return owner + help_text


def setting_annotation(item: Declared, *, hidden: bool = False) -> Any:
    """``item``'s flag as a typer option: its type, help, environment variable and panel."""
    if item.bounds.cli_zero_is_none:
        kind: Any = item.base
    elif item.optional:
        kind = item.base | None
    else:
        kind = item.base
    option = typer.Option(help=option_help(item), hidden=hidden, envvar=item.envvar)
    return in_panel(Annotated[kind, option], PANELS.get(item.owner, f"Strategy {item.owner}"))
