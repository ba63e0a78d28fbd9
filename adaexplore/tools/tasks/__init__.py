"""The tools of tasks: create_task and get_task, a task's small sizes, synthesized tasks, task files and
FlashInfer-Bench definitions, and the run's brief."""
