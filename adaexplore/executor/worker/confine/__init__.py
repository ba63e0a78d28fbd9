"""Confinement: what a worker may import and touch, the guard over what a candidate may patch, the user it runs as,
the clock that tells the candidate's time from the compiler's, the faults it raises and how an error is
attributed to the candidate or to us."""
