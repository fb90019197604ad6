"""AgentDojo (PyPI ``agentdojo``, MIT) as a live agent environment.

Each user task of an AgentDojo suite (``banking``, ``slack``, ``travel``, ``workspace``) is a
sample; its episode runs AgentDojo's own tool-calling loop (``AgentPipeline``,
``ToolsExecutionLoop``, ``ToolsExecutor``, ``FunctionsRuntime``) on a fresh copy of the suite's
environment, with Combee's model step (:mod:`.step`), and AgentDojo's own check of the user
task (``utility``) gives the reward. Under one of AgentDojo's attacks (:mod:`.attacks`) the
environment carries planted instructions and each episode says whether the attack succeeded.

agentdojo is an optional dependency (``pip install 'combee[agentdojo]'``); it is imported only
when a task is built or an episode is run.
"""

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
    from combee.tasks.agentdojo.agent import AgentDojoAgent, feedback_text
    from combee.tasks.agentdojo.attacks import attack_names
    from combee.tasks.agentdojo.environment import (
        DEFAULT_VERSION,
        INSTALL_HINT,
        load_suite,
        versions,
    )
    from combee.tasks.agentdojo.step import STEP_SCHEMA, CombeeStep
    from combee.tasks.agentdojo.suites import (
        agentdojo_samples,
        agentdojo_task,
        parse_task_name,
        suite_names,
        task_name,
    )

_EXPORTS = {
    "AgentDojoAgent": "combee.tasks.agentdojo.agent",
    "feedback_text": "combee.tasks.agentdojo.agent",
    "attack_names": "combee.tasks.agentdojo.attacks",
    "DEFAULT_VERSION": "combee.tasks.agentdojo.environment",
    "INSTALL_HINT": "combee.tasks.agentdojo.environment",
    "load_suite": "combee.tasks.agentdojo.environment",
    "versions": "combee.tasks.agentdojo.environment",
    "STEP_SCHEMA": "combee.tasks.agentdojo.step",
    "CombeeStep": "combee.tasks.agentdojo.step",
    "agentdojo_samples": "combee.tasks.agentdojo.suites",
    "agentdojo_task": "combee.tasks.agentdojo.suites",
    "parse_task_name": "combee.tasks.agentdojo.suites",
    "suite_names": "combee.tasks.agentdojo.suites",
    "task_name": "combee.tasks.agentdojo.suites",
}
"""Public name -> its module, imported when first used."""

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_VERSION",
    "INSTALL_HINT",
    "STEP_SCHEMA",
    "AgentDojoAgent",
    "CombeeStep",
    "agentdojo_samples",
    "agentdojo_task",
    "attack_names",
    "feedback_text",
    "load_suite",
    "parse_task_name",
    "suite_names",
    "task_name",
    "versions",
]
