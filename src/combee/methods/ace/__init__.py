"""ACE (Agentic Context Engineering): a playbook of bullets grown by reflection and curation."""

from combee.llm.types import ChatModel
from combee.methods.ace.method import AceMethod
from combee.methods.ace.operations import ApplyResult, apply_operations
from combee.methods.ace.playbook import DEFAULT_SECTIONS, Bullet, Playbook, Section, count_tokens
from combee.methods.ace.update import AceUpdate

__all__ = [
    "DEFAULT_SECTIONS",
    "AceMethod",
    "AceUpdate",
    "ApplyResult",
    "Bullet",
    "ChatModel",
    "Playbook",
    "Section",
    "apply_operations",
    "count_tokens",
]
