"""Where a command's JSON goes: `--json FILE` writes a file, `--json -` standard output, on every command that has
the option (`profile`, `bench`, `bench show`); `bench`'s `--csv` takes the same. A file is written whole or not at
all, and its folder is checked before anything runs, so that a long bench does not end on a path it cannot write."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from adaexplore.errors import RequestError

__all__ = ["STDOUT", "output_file", "write_file"]

STDOUT = "-"


def output_file(text: str) -> str:
    """An argparse type: '-' (standard output), or a file whose folder exists and that is not itself a folder.
    The text is kept as given, so that `./-` names a file called '-'."""
    if text == STDOUT:
        return text
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file to write, or - for standard output")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: the folder {path.parent} does not exist")
    return text


def write_file(path: Path, text: str) -> None:
    """Write the file whole or not at all (a reader never sees half of it).

    Raises:
        RequestError: the file cannot be written (its folder is missing, it is a folder, no permission, …).
    """
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except FileNotFoundError:
        raise RequestError(f"cannot write {path}: the folder {path.parent} does not exist") from None
    except OSError as exc:
        raise RequestError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, IsADirectoryError):
            raise RequestError(f"cannot write {path}: it is a folder") from None
        raise RequestError(f"cannot write {path}: {exc.strerror or exc}") from None
