"""What a kernel's stores cover at full size, without running it: a walk of each launch's Triton IR over every
program, the spans it writes, and the outputs' elements no launch writes."""
