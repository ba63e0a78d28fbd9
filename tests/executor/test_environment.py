"""The machine's environment read from package metadata, on a machine without a GPU, is the probe's answer; where
the workers would import another copy of a package than the one the metadata describes, the probe runs."""

import importlib.metadata
import os
from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.executor.host._environment import environment_without_gpus, probe_environment
from adaexplore.executor.host._workspace import worker_env
from tests.conftest import ON_GPU

pytestmark = pytest.mark.anyio

NO_GPU = pytest.mark.skipif(ON_GPU, reason="a machine with a GPU always runs the probe: only CUDA names its GPUs")


def with_path_first(tmp_path: Path, folder: Path) -> dict[str, str]:
    env = dict(worker_env(Settings(home=tmp_path)))
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env["PYTHONPATH"]])
    return env


@NO_GPU
async def test_the_metadata_gives_what_the_probe_finds(tmp_path: Path) -> None:
    env = worker_env(Settings(home=tmp_path))
    quick = environment_without_gpus(env)
    assert quick is not None
    assert quick == await probe_environment(env, quick=False)


def test_a_folder_that_shadows_torch_for_the_workers_sends_it_to_the_probe(tmp_path: Path) -> None:
    (tmp_path / "shadow" / "torch").mkdir(parents=True)
    assert environment_without_gpus(with_path_first(tmp_path, tmp_path / "shadow")) is None
    # even one holding the same torch, reached another way
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "torch").symlink_to(Path(str(importlib.metadata.distribution("torch").locate_file("torch"))))
    assert environment_without_gpus(with_path_first(tmp_path, tmp_path / "linked")) is None


@NO_GPU
def test_an_installed_adaexplore_whose_root_is_torchs_own_folder_still_reads_the_metadata(tmp_path: Path) -> None:
    # installed from a wheel, adaexplore's root (which workers search first) is the site-packages holding torch
    site = Path(str(importlib.metadata.distribution("torch").locate_file("")))
    assert environment_without_gpus(with_path_first(tmp_path, site)) is not None
    # and a folder on their path that holds none of the packages changes nothing
    assert environment_without_gpus(with_path_first(tmp_path, tmp_path)) is not None
