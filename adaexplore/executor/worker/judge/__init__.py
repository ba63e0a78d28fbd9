"""The judge's side: the reference built and kept, inputs drawn on secret seeds, outputs compared, degenerate tasks
named, and the size probe. It never imports the candidate's room."""
