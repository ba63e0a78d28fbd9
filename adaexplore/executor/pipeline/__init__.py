"""The caller's evaluation of one candidate: the `Evaluator` (its lifecycle, lanes and the retry of our own
failures), the stages it runs in order (`stages/`, each handed a `Lane`), the jobs it gives workers, the input
sets of a task judged on each, and the words of a verdict. It never imports torch; it reaches workers through
`executor.host` and speaks to them through `executor.wire`."""

from adaexplore.executor.pipeline._evaluator import Evaluator, Progress, ProgressUpdate
from adaexplore.executor.pipeline._render import render_evaluation
from adaexplore.executor.pipeline._request import EvaluationOptions, EvaluatorProtocol, TaskCheck
from adaexplore.executor.pipeline.stages.speed import calibration_for, describe_sol, sol_for, target_gpu

__all__ = [
    "EvaluationOptions",
    "Evaluator",
    "EvaluatorProtocol",
    "Progress",
    "ProgressUpdate",
    "TaskCheck",
    "calibration_for",
    "describe_sol",
    "render_evaluation",
    "sol_for",
    "target_gpu",
]
