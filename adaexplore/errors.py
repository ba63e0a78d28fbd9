"""Exceptions raised when a caller erred or the evaluator itself failed.

A kernel that fails is never an exception: it is an `Evaluation` with a status. Exceptions are for
the caller's mistakes (a task that cannot be used, a bad setting) and for faults of our own.

    AdaexploreError
     ├── ConfigError          a setting or settings file is wrong
     ├── TaskError            a task module cannot serve as a reference (no Model, get_inputs raised, …)
     └── EvaluatorError       the evaluator itself could not do its work (a worker died at start, …)
"""

from __future__ import annotations

__all__ = ["AdaexploreError", "ConfigError", "EvaluatorError", "TaskError"]


class AdaexploreError(Exception):
    """Base class of every error adaexplore raises on purpose."""


class ConfigError(AdaexploreError):
    """A setting, or the settings file, is invalid."""


class TaskError(AdaexploreError):
    """A task (reference module) is unusable; the message says what to change in it."""


class EvaluatorError(AdaexploreError):
    """The evaluator failed for a reason of its own, not the candidate's."""
