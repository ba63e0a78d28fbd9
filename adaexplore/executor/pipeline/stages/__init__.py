"""The stages of one evaluation, in the order the evaluator runs them: `static` (the source alone),
`compile` (the real Triton compiler for sm_90), `numerics` (the trials and the judge's comparison),
`timing` (the reference, cached, and then the candidate), and `result` (the verdict and its
provenance). Each works on one `context.Run`; `worker` is their conversation with the worker processes and
`faults` decides whose fault a failure is."""
