"""Speeds in the tools' words: the target GPU, a task's speed of light, a verdict's measured or estimated speed."""

from __future__ import annotations

from adaexplore.roofline import gpu_spec, known_gpus

__all__ = ["check_target_gpu", "known_target_gpus"]


def known_target_gpus() -> list[str]:
    """The GPUs whose peaks adaexplore knows."""
    return known_gpus()


def check_target_gpu(name: str) -> str:
    """The table's name for a target GPU.

    Raises:
        ConfigError: the table holds no GPU of that name; the message lists those it holds.
    """
    return gpu_spec(name).name
