"""The headless mode: the model client, code and edit extraction, and the explore and adapt loops."""

from typing import TYPE_CHECKING, Any

from adaexplore.agent._abandon import Abandonable, deaf_to_signals
from adaexplore.agent._explore import Budget, Explorer, StepRecord, TaskSummary, rule_from_reply, run_all
from adaexplore.agent._extract import apply_edits, extract_code, parse_edits, syntax_problem
from adaexplore.agent._headless import AdaptOptions, ExploreOptions, adapt, connect_model, explore, parse_duration
from adaexplore.agent._messages import Message, Reply, Usage
from adaexplore.agent._writers import ModelWriter, ReplayWriter, Writer, replay_kernels

if TYPE_CHECKING:
    from adaexplore.agent._client import ModelClient

__all__ = [
    "Abandonable",
    "AdaptOptions",
    "Budget",
    "ExploreOptions",
    "Explorer",
    "Message",
    "ModelClient",
    "ModelWriter",
    "ReplayWriter",
    "Reply",
    "StepRecord",
    "TaskSummary",
    "Usage",
    "Writer",
    "adapt",
    "apply_edits",
    "connect_model",
    "deaf_to_signals",
    "explore",
    "extract_code",
    "parse_duration",
    "parse_edits",
    "replay_kernels",
    "rule_from_reply",
    "run_all",
    "syntax_problem",
]


def __getattr__(name: str) -> Any:
    # ModelClient loads on first use: importing the OpenAI SDK takes about a second, which the offline
    # generator and the commands that never call a model should not pay
    if name == "ModelClient":
        from adaexplore.agent._client import ModelClient

        return ModelClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
