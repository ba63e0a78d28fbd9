"""The wire: what the caller's side and the worker's side say to each other, and nothing else. Pure data and
the kernel's interfaces both sides need; no torch, no process of ours.

- `_protocol`: the commands and events of a worker's conversation, and the job it is given;
- `_modes`: the evaluation protocols (`kernelbench`, `strict`, ...) as the worker applies them;
- `_confinement`: what a worker applies to itself before it is handed a candidate;
- `_landlock`: the kernel's Landlock interface (the caller probes its version, the worker restricts itself);
- `_side`: the side socket that carries file descriptors between them.

The room sits below the host's and the worker's rooms and above `tasks` and `policy`; import-linter keeps it
so (pyproject.toml).
"""
