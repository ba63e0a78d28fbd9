"""Small sizes derived for task modules that have none: the candidates read from the text, and the probe that
runs the reference at them in a sandboxed worker of the evaluator's (role `sizes`), never in this process."""

from __future__ import annotations

import ast
import os
import secrets
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

import adaexplore
from adaexplore.config import Settings
from adaexplore.errors import ConfigError
from adaexplore.executor.probes._size_prober import SizeProber, derive_small_sizes
from adaexplore.executor.tasks._small_sizes import (
    BUDGET_S,
    Attempt,
    Derivation,
    candidates,
    module_sizes,
    with_small_sizes,
)
from adaexplore.executor.tasks._task import task_from_source
from tests.conftest import fast_settings

KERNELBENCH = Path(__file__).resolve().parents[3] / "shared" / "data" / "kernelbench"

GROUPED = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, channels, groups, kernel_size):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels * 2, kernel_size, groups=groups)

        def forward(self, x):
            return self.conv(x)

    batch_size = 64
    channels = 96
    groups = 12
    kernel_size = 5
    height, width = 300, 200
    wide = 2 * width

    def get_inputs():
        return [torch.rand(batch_size, channels, height, width)]

    def get_init_inputs():
        return [channels, groups, kernel_size]
""")


def test_candidates_keep_structure_and_divisibility() -> None:
    found, reason = candidates(GROUPED)
    assert reason is None
    # first, at each cap, the groups scaled down with the channels, so that each group keeps its 96 / 12 = 8
    shared, plain = found[0].sizes, found[1].sizes
    assert shared["channels"] <= 17 and shared["channels"] // shared["groups"] == 8
    assert shared["channels"] % shared["groups"] == 0
    # then the groups kept as written, the channels still divisible by them
    assert plain["batch_size"] == 2
    assert plain["channels"] % 12 == 0 and plain["channels"] <= 17
    assert "groups" not in plain and "kernel_size" not in plain and "kernel_size" not in shared  # structural
    assert (plain["height"], plain["width"]) == (17, 17) == (shared["height"], shared["width"])
    assert plain["wide"] == 2 * plain["width"]  # a derived name follows the one it is computed from
    # smallest first, a ragged size before the power of two; the last lowers only the batch
    heights = [c.sizes.get("height") for c in found]
    assert heights == [17, 17, 16, 16, 33, 33, 32, 32, 65, 65, 64, 64, 129, 128, 257, 256, None]
    assert all(c.sizes["channels"] // c.sizes["groups"] == 8 for c in found if "groups" in c.sizes)
    assert found[-1].sizes == {"batch_size": 2}
    assert module_sizes(GROUPED)[0]["height"] == 300


def test_a_derived_assignment_is_read_back_and_overrides_an_earlier_one() -> None:
    source = with_small_sizes(GROUPED + "\nSMALL_SIZES = {'batch_size': 3}\n", {"batch_size": 2}, "a test")
    assert task_from_source(source).small_sizes == {"batch_size": 2}
    assert ast.parse(source)  # still a module


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return fast_settings(tmp_path / "home")


# KernelBench Level 3 problem 2's layers: the hidden widths are a list of sizes, the input a tuple of one
WIDE_LIST = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, input_size, hidden_layer_sizes, output_size):
            super().__init__()
            widths = [input_size, *hidden_layer_sizes, output_size]
            self.layers = nn.Sequential(*[nn.Linear(a, b) for a, b in zip(widths, widths[1:])])

        def forward(self, x):
            return self.layers(x)

    batch_size = 128
    input_size = 16384
    input_shape = (input_size,)
    hidden_layer_sizes = [32768, 32768, 4]
    feature_shape = (8192 * 2,)
    output_size = 16384
    kernel_size = (5, 7)

    def get_inputs():
        return [torch.rand(batch_size, *feature_shape)]

    def get_init_inputs():
        return [input_size, hidden_layer_sizes, output_size]
""")


def test_a_list_or_tuple_of_sizes_shrinks_element_for_element(tmp_path: Path) -> None:
    from adaexplore.errors import TaskError
    from adaexplore.executor.worker.task._taskrun import load_task_module, shrink_globals

    first = candidates(WIDE_LIST)[0][0].sizes
    # each element as a size (a small one kept), a tuple of literals too; a structural tuple and a tuple built
    # from a name (which follows that name) are not in SMALL_SIZES
    assert first["hidden_layer_sizes"] == [17, 17, 4] and first["feature_shape"] == [17]
    assert first["input_size"] == 17 and "kernel_size" not in first and "input_shape" not in first
    path = tmp_path / "task.py"
    path.write_text(with_small_sizes(WIDE_LIST, first, "test"))
    task = task_from_source(path.read_text())
    assert task.small_sizes == first
    module = load_task_module(str(path), task.small_sizes, name="adaexplore_test_wide_list")
    assert module.hidden_layer_sizes == [17, 17, 4] and module.feature_shape == (17,)  # a tuple stays a tuple
    assert module.input_shape == (17,) and module.kernel_size == (5, 7)
    model = module.Model(*module.get_init_inputs())
    assert tuple(model(*module.get_inputs()).shape) == (2, 17)
    # a candidate's own copy of the list shrinks with the task's, one of another length does not
    copied = type(module)("adaexplore_test_candidate")
    copied.__dict__.update(hidden_layer_sizes=[32768, 32768, 4], feature_shape=(16384, 2), batch_size=128)
    assert shrink_globals(copied, first) == ["batch_size", "hidden_layer_sizes"]
    assert copied.hidden_layer_sizes == [17, 17, 4] and copied.feature_shape == (16384, 2)
    # the sizes line shows the lists as they ran
    chosen = Attempt(how="sizes capped at 17", sizes=first, ok=True, forward_s=0.1)
    assert "hidden_layer_sizes=[17, 17, 4]" in Derivation(sizes=first, attempts=[chosen]).note()
    with pytest.raises(TaskError, match="lists of integers"):
        task_from_source(WIDE_LIST + "\nSMALL_SIZES = {'hidden_layer_sizes': [1.5]}\n")


@pytest.mark.anyio
async def test_the_probe_derives_sizes_under_which_the_reference_runs(settings: Settings) -> None:
    derivation = await derive_small_sizes(GROUPED, settings=settings, timeout_s=60)
    assert derivation.sizes is not None, derivation.reason
    # the groups scaled with the channels: each keeps its eight channels, as at full size
    assert derivation.sizes["channels"] == 8 * derivation.sizes["groups"]
    chosen = derivation.chosen
    assert chosen is not None and chosen.forward_s is not None and chosen.forward_s < BUDGET_S
    assert "SMALL_SIZES derived" in derivation.note() and "channels=" in derivation.note()
    assert "sandbox" not in derivation.note()


@pytest.mark.anyio
async def test_a_kernel_larger_than_the_smallest_input_moves_to_a_larger_candidate(settings: Settings) -> None:
    source = GROUPED.replace("kernel_size = 5", "kernel_size = 21")
    derivation = await derive_small_sizes(source, settings=settings, timeout_s=60)
    assert derivation.sizes is not None, derivation.reason
    assert min(derivation.sizes["height"], derivation.sizes["width"]) >= 21
    refused = derivation.attempts[0]
    assert not refused.ok and "Kernel size" in (refused.reason or "")


@pytest.mark.anyio
async def test_a_reference_that_hangs_is_stopped_and_named_and_the_next_task_gets_a_fresh_worker(
    settings: Settings,
) -> None:
    source = GROUPED.replace("return self.conv(x)", "import time; time.sleep(60); return self.conv(x)")
    async with SizeProber(settings) as prober:
        began = time.monotonic()
        derivation = await prober.derive(source, timeout_s=3)
        assert time.monotonic() - began < 30
        assert derivation.sizes is None
        assert "longer than 3 s" in (derivation.reason or "")
        assert "no small sizes derived" in derivation.note()
        assert (await prober.derive(GROUPED, timeout_s=60)).sizes, "the hung worker was not replaced"


@pytest.mark.anyio
async def test_a_reference_that_kills_its_process_is_named(settings: Settings) -> None:
    source = GROUPED.replace("return self.conv(x)", "import os; os._exit(7)")
    derivation = await derive_small_sizes(source, settings=settings, timeout_s=60)
    assert derivation.sizes is None
    assert "died (code 7)" in (derivation.reason or ""), derivation.reason


@pytest.mark.anyio
async def test_a_reference_that_fails_at_every_size_says_why(settings: Settings) -> None:
    source = GROUPED.replace("return self.conv(x)", "raise ValueError('broken on purpose')")
    derivation = await derive_small_sizes(source, settings=settings, timeout_s=60)
    assert derivation.sizes is None
    assert "fails at every candidate" in (derivation.reason or "") and "broken on purpose" in (derivation.reason or "")


# A task module whose module-level code, run by the probe, tries to leave a file outside its worker's directory
# (the host's temporary folder, the user's home, the folder its own file is read from) and to list the user's
# home. It raises (so no candidate runs, and no sizes are derived) when a listing shows one of the user's files
# or a write into its task folder succeeds; a write elsewhere it cannot see, so the test looks for the files.
ESCAPING = (
    textwrap.dedent("""
    import os
    from pathlib import Path

    for target in TARGETS:
        try:
            Path(target).write_text("escaped")
        except OSError:
            pass
    seen = {}
    for place in HOMES:
        try:
            seen[place] = os.listdir(place)
        except OSError:
            pass
    if any(set(names) & set(PRIVATE) for names in seen.values()):
        raise RuntimeError(f"the task module listed {seen}")
    try:
        Path(__file__).with_name("planted.py").write_text("escaped")
    except OSError:
        pass
    else:
        raise RuntimeError("the task module wrote into its task folder")
""")
    + GROUPED
)


def _escaping(targets: list[Path], home: Path) -> str:
    # what the home holds on this machine, but for the way to the Python installation and the package, which the
    # sandbox puts back read-only (a mount point is all a listing shows of them)
    needed = (sys.prefix, sys.base_prefix, os.path.realpath(sys.executable), adaexplore.__file__)
    put_back = {Path(p).resolve().relative_to(home).parts[0] for p in needed if Path(p).resolve().is_relative_to(home)}
    private = sorted({entry.name for entry in home.iterdir()} - put_back)
    assert private
    return f"TARGETS = {[str(t) for t in targets]!r}\nHOMES = {[str(home)]!r}\nPRIVATE = {private!r}\n" + ESCAPING


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["bwrap", "landlock"])
async def test_module_code_cannot_write_outside_its_directory_nor_list_the_home(kind: str, tmp_path: Path) -> None:
    token = secrets.token_hex(4)
    secret = Path.home() / f".adaexplore-sizes-secret-{token}"  # the home shows something to whoever can list it
    targets = [tmp_path / "audit" / "pwned", Path("/tmp") / f"adaexplore-sizes-pwned-{token}"]
    targets.append(Path.home() / f".adaexplore-sizes-pwned-{token}")
    (tmp_path / "audit").mkdir()
    secret.write_text("secret")
    try:
        settings = fast_settings(tmp_path / "home", sandbox=kind)
        try:
            derivation = await derive_small_sizes(_escaping(targets, Path.home()), settings=settings, timeout_s=60)
        except ConfigError as exc:
            pytest.skip(f"no {kind} sandbox on this machine: {exc}")
        assert derivation.sizes, derivation.note()  # the module ran, and saw nothing
        assert derivation.sizes["channels"] % derivation.sizes["groups"] == 0
        assert [t for t in targets if t.exists()] == []
    finally:
        secret.unlink(missing_ok=True)
        for target in targets:
            target.unlink(missing_ok=True)


@pytest.mark.anyio
async def test_without_a_sandbox_only_where_the_settings_say_so_and_the_answer_says_it(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "home", sandbox="none")
    derivation = await derive_small_sizes(GROUPED, settings=settings, timeout_s=60)
    assert derivation.sizes and derivation.unconfined
    assert derivation.note().endswith("the reference ran without a sandbox (executor.sandbox is 'none')")


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="the KernelBench problems (shared/data/kernelbench) are absent")
async def test_every_kernelbench_problem_gets_small_sizes_or_a_reason(settings: Settings) -> None:
    files = sorted(p for level in ("level1", "level2") for p in (KERNELBENCH / level).glob("*.py"))
    # Level 3's whole models take three quarters of the time: every other one, all with ADAEXPLORE_SIZES_ALL=1
    whole = sorted((KERNELBENCH / "level3").glob("*.py"))
    files += whole if os.environ.get("ADAEXPLORE_SIZES_ALL") == "1" else whole[::2]
    assert len(files) > 200
    pending = iter(files)
    results: list[tuple[Path, Derivation, float]] = []

    async def derive_in_turn() -> None:
        async with SizeProber(settings, threads=1) as prober:
            for path in pending:
                began = time.monotonic()
                derivation = await prober.derive(path.read_text(), timeout_s=15)
                results.append((path, derivation, time.monotonic() - began))

    async with anyio.create_task_group() as group:
        for _ in range(2):  # CI has two cores: one single-threaded probe on each
            group.start_soon(derive_in_turn)
    results.sort()
    failures = []
    for path, derivation, _ in results:
        name = f"{path.parent.name}/{path.name}"
        if derivation.sizes is None:
            assert derivation.reason, f"{name}: no sizes and no reason"
            failures.append(f"{name}: {derivation.reason}")
        else:
            assert derivation.chosen is not None and (derivation.chosen.forward_s or 0.0) < BUDGET_S, name
    total = sum(seconds for *_, seconds in results)
    print(f"\n{len(results) - len(failures)}/{len(results)} got sizes; {total / len(results):.2f} s per problem")
    print("\n".join(failures))
    assert len(failures) <= len(results) // 20, "\n".join(failures)


SHAPED = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, in_features, out_features, bias_shape):
            super().__init__()
            self.gemm = nn.Linear(in_features, out_features, bias=False)
            self.bias = nn.Parameter(torch.randn(bias_shape))

        def forward(self, x):
            return torch.relu(self.gemm(x) + self.bias)

    batch_size = 1024
    in_features = 8192
    out_features = 8192
    bias_shape = (out_features,)
    dim = 393216

    def get_inputs():
        return [torch.rand(batch_size, in_features)]

    def get_init_inputs():
        return [in_features, out_features, bias_shape]
""")


def test_a_size_a_tuple_is_built_from_is_scaled_and_the_tuple_follows(tmp_path: Path) -> None:
    """KernelBench Level 2 problem 76 builds `bias_shape = (out_features,)`: SMALL_SIZES, applied to the module's
    own assignments, scales out_features and the tuple with it; a `dim` of 393216 is a size, not an axis."""
    from adaexplore.executor.worker.task._taskrun import load_task_module

    first = candidates(SHAPED)[0][0].sizes
    assert first["out_features"] <= 17 and first["in_features"] <= 17 and first["dim"] <= 17
    path = tmp_path / "task.py"
    path.write_text(with_small_sizes(SHAPED, first, "test"))
    module = load_task_module(str(path), first, name="adaexplore_test_shaped")
    assert module.bias_shape == (first["out_features"],) and module.out_features == first["out_features"]
    model = module.Model(*module.get_init_inputs())
    assert tuple(model(*module.get_inputs()).shape) == (first["batch_size"], first["out_features"])


# KernelBench Level 2 problem 62's layers: capped as written, 8192 channels in 512 groups become 512 channels in 512
# groups of one, and a GroupNorm of one channel outputs rounding noise around zero
GROUPS_OF_SIXTEEN = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, input_size, hidden_size, num_groups):
            super().__init__()
            self.fc = nn.Linear(input_size, hidden_size)
            self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=hidden_size)

        def forward(self, x):
            x = torch.nn.functional.leaky_relu(self.gn(self.fc(x)), 0.01)
            return x + x

    batch_size = 1024
    input_size = 8192
    hidden_size = 8192
    num_groups = 512

    def get_inputs():
        return [torch.rand(batch_size, input_size)]

    def get_init_inputs():
        return [input_size, hidden_size, num_groups]
""")

# zero whatever the input at every size: the largest of each row minus the mean of that one value (Level 2 problem
# 80's layers), small enough at full size for the probe to check it there
ZERO_EVERYWHERE = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.gemm = nn.Linear(in_features, out_features)

        def forward(self, x):
            x = torch.max(self.gemm(x), dim=1, keepdim=True).values
            return torch.nn.functional.gelu(x - x.mean(dim=1, keepdim=True))

    batch_size = 64
    in_features = 256
    out_features = 256

    def get_inputs():
        return [torch.rand(batch_size, in_features)]

    def get_init_inputs():
        return [in_features, out_features]
""")

# zero at a batch of 2 (every candidate lowers the batch), the input itself at the full batch of 16
ZERO_WHEN_SMALL = (
    ZERO_EVERYWHERE.replace("x = torch.max(self.gemm(x), dim=1, keepdim=True).values", "x = self.gemm(x)")
    .replace("return torch.nn.functional.gelu(x - x.mean(dim=1, keepdim=True))", "return x * (len(x) >= 8)")
    .replace("batch_size = 64", "batch_size = 16")
)


# zero at every size under some weights: a switch drawn with the weights is on for seed 42 (0.34), off for 1234 (0.05)
ZERO_UNDER_SOME_WEIGHTS = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, features):
            super().__init__()
            self.switch = nn.Parameter(torch.randn(1))
            self.gemm = nn.Linear(features, features)

        def forward(self, x):
            return self.gemm(x) * (self.switch > 0.2).to(x.dtype)

    batch_size = 64
    features = 256

    def get_inputs():
        return [torch.rand(batch_size, features)]

    def get_init_inputs():
        return [features]
""")


@pytest.mark.anyio
async def test_sizes_where_the_task_is_degenerate_are_refused_for_groups_that_keep_their_channels(
    settings: Settings,
) -> None:
    async with SizeProber(settings) as prober:
        derivation = await prober.derive(GROUPS_OF_SIXTEEN, timeout_s=60)
        sizes = derivation.sizes
        assert sizes is not None and derivation.degenerate is None, derivation.note()
        assert sizes["hidden_size"] == 16 * sizes["num_groups"] and sizes["num_groups"] >= 2
        refused = derivation.attempts[0]
        assert refused.sizes["hidden_size"] == 512 and "num_groups" not in refused.sizes  # 512 groups of one
        assert not refused.ok and refused.degenerate is not None and refused.degenerate.kind == "noise"
        assert "degenerate at these sizes" in (refused.reason or "")
        # degenerate at every size and at full size: the smallest sizes are kept, and the task named
        derivation = await prober.derive(ZERO_EVERYWHERE, timeout_s=60)
        found = derivation.degenerate
        assert found is not None and found.kind == "constant" and found.value == 0 and found.sizes == "full"
        assert derivation.sizes == derivation.attempts[0].sizes
        assert derivation.attempts[-1].how == "the task's full sizes"
        assert (
            found.line() in derivation.note() and "degenerate at every size tried and at its full" in derivation.note()
        )
        # degenerate at every smaller size, not at full size: no small sizes, the CPU checks run at full size
        derivation = await prober.derive(ZERO_WHEN_SMALL, timeout_s=60)
        assert derivation.sizes is None and derivation.degenerate is None, derivation.note()
        assert "at its full sizes it is not" in (derivation.reason or "")
        assert "CPU checks run at the task's full sizes" in derivation.note()
        # degenerate at every size under another draw of the weights only: the weights decide, not the sizes, so
        # the first sizes are kept, and the note says so without naming the task degenerate
        derivation = await prober.derive(ZERO_UNDER_SOME_WEIGHTS, timeout_s=60)
        assert derivation.sizes == derivation.attempts[0].sizes and derivation.degenerate is None
        assert derivation.fragile is not None and derivation.fragile.kind == "constant"
        assert "under another draw of the weights, the task is degenerate at every size tried" in derivation.note()
        # a model that cannot run in float64 is checked in its own dtype, and still gets its sizes
        float32_only = ZERO_UNDER_SOME_WEIGHTS.replace(
            "return self.gemm(x) * (self.switch > 0.2).to(x.dtype)",
            'assert x.dtype == torch.float32, "float32 only"\n        return self.gemm(x)',
        )
        derivation = await prober.derive(float32_only, timeout_s=60)
        assert derivation.sizes == derivation.attempts[0].sizes and derivation.attempts[0].ok, derivation.note()
