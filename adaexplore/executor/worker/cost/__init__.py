"""What a forward does at full size without a GPU: the task on shape-only tensors, each operator's and launch's
work, and what the compiled kernels cost (registers, spills, shared memory, the assembler's word)."""
