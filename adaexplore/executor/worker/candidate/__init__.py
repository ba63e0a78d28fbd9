"""The candidate's side: its worker compiles the candidate's kernels, runs its trials and times it, and knows the
judge only through what the evaluator hands over. It never imports the judge's room."""
