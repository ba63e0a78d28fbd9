"""One-off sandboxed workers that are not evaluations: the size prober that derives a task's `SMALL_SIZES`
(`_size_prober`), and the synthesis of tasks and the checks of their sources (`_synth`). They sit beside the
pipeline, over the host's room and the wire."""

from adaexplore.executor.probes._size_prober import SizeProber, derive_small_sizes
from adaexplore.executor.probes._synth import SynthesisReport, SyntheticTask, synthesize_tasks

__all__ = ["SizeProber", "SynthesisReport", "SyntheticTask", "derive_small_sizes", "synthesize_tasks"]
