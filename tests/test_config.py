from pathlib import Path

import pytest

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.errors import ConfigError


def test_a_settings_file_overrides_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('[executor]\nmode = "paper"\ntrial_timeout_s = 5\n')
    settings = Settings.load(path)
    assert settings.executor.mode == "paper"
    assert settings.executor.trial_timeout_s == 5
    assert settings.executor.max_concurrent == Settings().executor.max_concurrent


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[executor]\nmode = 'fast'\n", "mode"),
        ("[executor]\ntrial_timeouts = 5\n", "trial_timeouts"),
        ("[executor\n", "not valid TOML"),
        ("[executor]\ntrial_timeout_s = -1\n", "trial_timeout_s"),
    ],
)
def test_a_bad_settings_file_names_the_problem(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        Settings.load(path)


def test_a_settings_file_that_was_named_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        Settings.load(tmp_path / "missing.toml")


def test_home_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ADAEXPLORE_HOME", str(tmp_path))
    assert Settings().home == tmp_path
    assert Settings().cache_dir == tmp_path / "cache"


def test_the_guards_can_be_turned_off_only_inside_the_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ExecutorConfig(disable_guards_for_tests=True).policy_on is False  # conftest sets ADAEXPLORE_TESTING
    monkeypatch.delenv("ADAEXPLORE_TESTING")
    with pytest.raises(ValueError, match="only the test suite may do"):
        ExecutorConfig(disable_guards_for_tests=True)
    assert ExecutorConfig(enforce_policy=False).policy_on is False


def test_the_sandbox_setting_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAEXPLORE_SANDBOX", "landlock")
    assert ExecutorConfig().sandbox == "landlock"
    monkeypatch.setenv("ADAEXPLORE_SANDBOX", "docker")
    with pytest.raises(ConfigError, match="ADAEXPLORE_SANDBOX='docker' is not one of auto, bwrap, landlock, none"):
        ExecutorConfig()
