"""The GPU as the CPU plays it: CUDA calls on the CPU, Triton's interpreter made to round, accumulate and
approximate as the GPU's tensor cores and fast math do."""
