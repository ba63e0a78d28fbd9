"""`adaexplore examples [DIR]`: write the example tasks and sample kernels that ship with the package."""

from __future__ import annotations

from pathlib import Path

import adaexplore
from adaexplore.errors import RequestError
from adaexplore.listing import first_of

__all__ = ["examples_source", "write_examples"]


def examples_source() -> Path:
    """Where the examples are: inside the installed package (a wheel puts them at adaexplore/examples), or
    beside the package in a checkout (examples/ at the repository root, as an editable install sees it).

    Raises:
        RequestError: neither holds them (a broken installation).
    """
    package = Path(adaexplore.__file__).resolve().parent
    for place in (package / "examples", package.parent / "examples"):
        if (place / "tasks").is_dir() and (place / "kernels").is_dir():
            return place
    raise RequestError(
        f"this installation of adaexplore has no examples (looked in {package / 'examples'} and "
        f"{package.parent / 'examples'}); reinstall it with `pip install --force-reinstall adaexplore`"
    )


def _files(source: Path) -> list[Path]:
    """The example files, relative to `source`: tasks/*.py and kernels/<task>/*.py."""
    found = sorted(source.glob("tasks/*.py")) + sorted(source.glob("kernels/*/*.py"))
    return [path.relative_to(source) for path in found]


def write_examples(target: Path, *, force: bool = False) -> str:
    """Copy the examples into `target` (tasks/ and kernels/); returns what to print.

    A file that exists with other content is left alone, and named, unless `force`.

    Raises:
        RequestError: `target` is a file, or cannot be written.
    """
    source = examples_source()
    if target.exists() and not target.is_dir():
        raise RequestError(f"{target} is a file; give a folder to write the examples into (it may not exist yet)")
    if target.resolve() == source.resolve():
        return f"the examples are already at {target}"
    written, same, kept = 0, 0, []
    for relative in _files(source):
        text = (source / relative).read_bytes()
        destination = target / relative
        if destination.exists():
            if destination.read_bytes() == text:
                same += 1
                continue
            if not force:
                kept.append(str(relative))
                continue
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(text)
        except OSError as exc:
            raise RequestError(f"cannot write {destination}: {exc.strerror or exc}") from exc
        written += 1
    tasks = sorted(path.stem for path in (target / "tasks").glob("*.py"))
    lines = [f"wrote {written} files to {target}" + (f" ({same} were there already)" if same else "")]
    if kept:
        lines.append(f"left {len(kept)} changed files alone ({first_of(kept, 5)}); pass --force to overwrite them")
    lines.append(f"tasks: {', '.join(tasks)}")
    example = target / "tasks" / "row_softmax.py"
    lines.append(
        f"try: adaexplore explore {example} --steps 5   "
        f"(or: adaexplore profile {example} {target / 'kernels' / 'row_softmax' / 'correct.py'})"
    )
    return "\n".join(lines)
