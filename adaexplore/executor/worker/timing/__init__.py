"""Timing and its rechecks, which both sides use: strict timing's perturbed inputs, the timed calls kept and the
positions they are rechecked at, drawn where a candidate cannot steer them."""
