from pathlib import Path

import pytest

from adaexplore.config import Settings
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
