"""Exceptions raised when a caller erred or the evaluator itself failed.

A kernel that fails is never an exception: it is an `Evaluation` with a status. Exceptions are for
the caller's mistakes (a task that cannot be used, a bad setting) and for faults of our own.

    AdaexploreError
     ├── ConfigError          a setting or settings file is wrong
     ├── TaskError            a task module cannot serve as a reference (no Model, get_inputs raised, …)
     ├── EvaluatorError       the evaluator itself could not do its work (a worker died at start, …)
     ├── RequestError         a call names something that does not exist or asks for what cannot be done
     │    ├── NotFoundError   an unknown task, run, node or expansion id
     │    └── ConflictError   another client's step changed the node first; choose the step again
     ├── StoreError           the database cannot be used (locked, from a newer adaexplore, unreadable)
     └── ModelError           the model endpoint failed in a way retrying will not fix (unreachable after
                              retries, a wrong key, an unknown model, a reply that never came)
"""

from __future__ import annotations

__all__ = [
    "AdaexploreError",
    "ConfigError",
    "ConflictError",
    "EvaluatorError",
    "ModelError",
    "NotFoundError",
    "RequestError",
    "StoreError",
    "TaskError",
]


class AdaexploreError(Exception):
    """Base class of every error adaexplore raises on purpose.

    The message is in the MCP tools' words (`start_run returns the ids`); `cli`, where given, says the same in
    the command line's (`adaexplore runs list lists the runs`). The command line prints `in_cli_words()`, the
    MCP server `str(exc)`.
    """

    def __init__(self, *args: object, cli: str | None = None) -> None:
        super().__init__(*args)
        self.cli = cli

    def in_cli_words(self) -> str:
        """The message as the command line shows it."""
        return self.cli if self.cli is not None else str(self)


class ConfigError(AdaexploreError):
    """A setting, or the settings file, is invalid."""


class TaskError(AdaexploreError):
    """A task (reference module) is unusable; the message says what to change in it."""


class EvaluatorError(AdaexploreError):
    """The evaluator failed for a reason of its own, not the candidate's."""


class RequestError(AdaexploreError):
    """The caller asked for something that cannot be done; the message says how to fix the call."""


class NotFoundError(RequestError):
    """An id that names nothing."""


class ConflictError(RequestError):
    """The tree changed under the call (another client's step landed first); choose the step again."""


class StoreError(AdaexploreError):
    """The database cannot be used as it is."""


class ModelError(AdaexploreError):
    """The model endpoint could not give a reply; the message says what to check (address, key, model name)."""
