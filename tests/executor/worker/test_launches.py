"""What the launch hook counts on a GPU, fed the object Triton's launcher hands it (a `LazyDict`).

The GPU suites run the same hook from real launches (`tests/adversarial`: the empty grid, the side
stream); these tests keep its rules checked on machines without one.
"""

import re
import textwrap

from triton.compiler.compiler import LazyDict

from adaexplore.executor._models import Backend
from adaexplore.executor.worker._launches import LaunchTracker, _launch_facts, def_line_source


def launch(name: str, stream: int, grid: tuple[int, ...]) -> LazyDict:
    # as Triton builds it: name, function and stream, then the kernel's launch_metadata with the grid
    facts = LazyDict({"name": name, "function": 0, "stream": stream})
    facts.add(_launch_facts, (grid, None, {}))
    return facts


def counting_tracker(stream: int) -> LaunchTracker:
    tracker = LaunchTracker(Backend.cuda)
    tracker.kernels = {"scale_relu"}
    tracker.counting, tracker._stream = True, stream
    return tracker


def test_a_launch_on_the_current_stream_with_programs_counts() -> None:
    tracker = counting_tracker(stream=0)
    tracker._enter(launch("scale_relu", 0, (4, 1, 1)))
    assert tracker.launches == ["scale_relu"] and not tracker.empty and not tracker.refusals


def test_a_grid_of_no_programs_is_not_a_launch() -> None:
    tracker = counting_tracker(stream=0)
    for grid in [(0, 1, 1), (4, 0, 1), (4, 1, 0)]:
        tracker._enter(launch("scale_relu", 0, grid))
    assert tracker.launches == [] and tracker.empty == ["scale_relu"] * 3


def test_a_launch_on_another_stream_is_refused() -> None:
    tracker = counting_tracker(stream=0)
    tracker._enter(launch("scale_relu", 0x5EED, (4, 1, 1)))
    assert len(tracker.refusals) == 1
    assert "You cannot launch kernels on a stream of your own: kernel scale_relu" in tracker.refusals[0]


def test_kernels_that_are_not_the_candidates_and_launches_outside_counting_are_ignored() -> None:
    tracker = counting_tracker(stream=0)
    tracker._enter(launch("torch_inductor_kernel", 0x5EED, (0, 1, 1)))
    tracker.counting = False
    tracker._enter(launch("scale_relu", 0x5EED, (0, 1, 1)))
    assert tracker.launches == [] and tracker.empty == [] and tracker.refusals == []


def test_a_kernels_source_starts_at_its_own_def_line_where_triton_would_start_elsewhere() -> None:
    honest = ["@triton.jit\n", "def k(x):\n", "    pass\n"]
    assert def_line_source(honest) == "def k(x):\n    pass\n"
    # a decorator's string holds a def line: Triton's cut (its first `^def` line) starts inside the string
    hidden = [
        "    @(lambda f, s='''\n",
        "    def k(x):\n",
        "        x.evil()\n",
        "    ''': f)\n",
        "    @triton.jit\n",
        "    def k(x):\n",
        "        pass\n",
    ]
    src = textwrap.dedent("".join(hidden))
    tritons_cut = src[re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE).start() :]
    assert def_line_source(hidden) == "def k(x):\n    pass\n" != tritons_cut
