"""ACE (Agentic Context Engineering): a playbook of bullets grown by reflection and curation."""

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
    from combee.llm.types import ChatModel
    from combee.methods.ace.method import AceMethod
    from combee.methods.ace.operations import ApplyResult, apply_operations
    from combee.methods.ace.playbook import (
        DEFAULT_SECTIONS,
        Bullet,
        Playbook,
        Section,
        count_tokens,
    )
    from combee.methods.ace.settings import AceSettings
    from combee.methods.ace.update import AceUpdate

_EXPORTS = {
    "ChatModel": "combee.llm.types",
    "AceMethod": "combee.methods.ace.method",
    "AceSettings": "combee.methods.ace.settings",
    "ApplyResult": "combee.methods.ace.operations",
    "apply_operations": "combee.methods.ace.operations",
    "DEFAULT_SECTIONS": "combee.methods.ace.playbook",
    "Bullet": "combee.methods.ace.playbook",
    "Playbook": "combee.methods.ace.playbook",
    "Section": "combee.methods.ace.playbook",
    "count_tokens": "combee.methods.ace.playbook",
    "AceUpdate": "combee.methods.ace.update",
}
"""Public name -> its module, imported when first used."""

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_SECTIONS",
    "AceMethod",
    "AceSettings",
    "AceUpdate",
    "ApplyResult",
    "Bullet",
    "ChatModel",
    "Playbook",
    "Section",
    "apply_operations",
    "count_tokens",
]
