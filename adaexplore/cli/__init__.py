"""The command line: `adaexplore serve|profile|explore|adapt|bench|report|runs|memory|doctor|examples`. It reaches
the search, the store and the evaluator only through `adaexplore.tools`."""

from adaexplore.cli._main import main

__all__ = ["main"]
