"""adaexplore: LLM-driven GPU kernel optimization with an evaluator that cannot be fooled."""

__version__ = "0.1.0"
