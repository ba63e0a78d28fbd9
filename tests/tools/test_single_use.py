"""`profile` and `memory confirm` keep no spare workers on a machine without a GPU, unless the settings ask."""

import pytest

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.tools import single_use
from tests.conftest import ON_GPU


@pytest.mark.skipif(ON_GPU, reason="on a GPU a one-command evaluator keeps its spares")
def test_a_single_use_evaluator_keeps_no_spares_unless_the_settings_say(tmp_path) -> None:
    assert single_use(Settings(home=tmp_path)).executor.warm_workers == 0
    chosen = Settings(home=tmp_path, executor=ExecutorConfig(warm_workers=2))
    assert single_use(chosen).executor.warm_workers == 2
    assert Settings(home=tmp_path).executor.warm_workers is None  # the caller's settings are left as they were
