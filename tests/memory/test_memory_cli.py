"""`adaexplore memory export|import` on files that cannot be written or read: the CLI as a subprocess, on a
real SQLite file in a temporary ADAEXPLORE_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def memory_cli(*args: str, home: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "adaexplore", "memory", *args],
        capture_output=True,
        env=dict(os.environ, ADAEXPLORE_HOME=str(home)),
        timeout=120,
        input=stdin,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def test_files_that_cannot_be_written_or_read_are_caller_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    missing_folder = tmp_path / "no-such-folder" / "memory.json"
    binary = tmp_path / "memory.bin"
    binary.write_bytes(bytes(range(128, 256)) * 4)
    cases = [
        (("export", str(missing_folder)), None, f"the folder {missing_folder.parent} does not exist"),
        (("export", str(tmp_path)), None, "it is a folder"),
        (("import", str(binary)), None, f"file {binary} is not UTF-8 text (byte 0 cannot be decoded)"),
        (("import", "-"), binary.read_bytes(), "standard input is not UTF-8 text"),
        (("import", str(tmp_path / "nope.txt")), None, "nope.txt does not exist"),
        (("import", str(tmp_path)), None, "is a folder; give the file to import"),
    ]
    for args, stdin, fragment in cases:
        done = memory_cli(*args, home=home, stdin=stdin)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("adaexplore: error: ") and fragment in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert not missing_folder.parent.exists()
    listed = memory_cli("list", "--all", home=home)
    assert listed.returncode == 0 and " imported " not in listed.stdout  # nothing came in


def test_the_authors_file_with_float_counts_and_repeats_imports_on_the_command_line(tmp_path: Path) -> None:
    rules = tmp_path / "rules.txt"
    rules.write_text(
        "You cannot call tl.float32 as a function||138.0\n"
        "You cannot use tl.tanh; write it with tl.exp.||34.0\n"
        "You cannot call tl.float32 as a function||2\n"
    )
    done = memory_cli("import", str(rules), home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert "imported 2 rules (0 already present; 1 repeated in the file" in done.stdout
    assert "unknown scope until `adaexplore memory confirm`" in done.stdout
    line = next(x for x in memory_cli("list", home=tmp_path / "home").stdout.splitlines() if "tl.float32 as" in x)
    assert line.split()[1:5] == ["active", "imported", "140", "0"] and " unknown " in line
