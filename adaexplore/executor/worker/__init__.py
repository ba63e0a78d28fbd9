"""The worker side of the executor: code that runs in spawned processes and imports torch and triton.

Nothing outside this package imports it; the evaluator starts it as `python -m adaexplore.executor.worker`.
"""
