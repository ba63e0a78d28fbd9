"""Running a task module inside a worker: its sizes, seeds, inputs, models and outputs."""
