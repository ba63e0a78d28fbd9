"""The machine's environment read from package metadata, on a machine without a GPU, is the probe's answer."""

import importlib.metadata
import os
import sys
from pathlib import Path

import anyio
import pytest

from adaexplore.config import Settings
from adaexplore.executor._environment import environment_without_gpus, probe_environment
from adaexplore.executor._workspace import worker_env
from tests.conftest import ON_GPU


@pytest.mark.skipif(ON_GPU, reason="a machine with a GPU always runs the probe: only CUDA names its GPUs")
def test_the_metadata_gives_what_the_probe_finds(tmp_path) -> None:
    env = worker_env(Settings(home=tmp_path))
    quick = environment_without_gpus(env)
    assert quick is not None
    assert quick == anyio.run(lambda: probe_environment(env, quick=False))


def test_a_folder_that_shadows_torch_for_the_workers_sends_it_to_the_probe(tmp_path) -> None:
    (tmp_path / "torch").mkdir()
    env = dict(worker_env(Settings(home=tmp_path)))
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    assert environment_without_gpus(env) is None


def test_another_python_path_for_the_workers_sends_it_to_the_probe(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "elsewhere"))
    env = {"PYTHONPATH": os.pathsep.join([sys.prefix, "/somewhere/else"])}
    assert environment_without_gpus(env) is None


@pytest.mark.skipif(ON_GPU, reason="a machine with a GPU always runs the probe: only CUDA names its GPUs")
def test_an_installed_adaexplore_whose_root_is_torchs_own_folder_still_reads_the_metadata(tmp_path) -> None:
    # installed from a wheel, adaexplore's root (which workers search first) is the site-packages holding torch
    site = Path(str(importlib.metadata.distribution("torch").locate_file("")))
    env = dict(worker_env(Settings(home=tmp_path)))
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    assert environment_without_gpus(env) is not None
