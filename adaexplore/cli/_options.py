"""Options that several commands share: checked numbers, the model options, and the budgets."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn, TypedDict

from pydantic import ValidationError

from adaexplore.config import ModelConfig, Settings, setting_problem
from adaexplore.errors import ConfigError
from adaexplore.store import MAX_INTEGER
from adaexplore.tools import check_target_gpu, known_target_gpus

__all__ = [
    "EXIT_INFRA",
    "EXIT_INTERRUPTED",
    "EXIT_KERNEL_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "NONNEGATIVE",
    "PORT",
    "POSITIVE",
    "POSITIVE_INT",
    "SEED",
    "Budgets",
    "OneLineErrors",
    "add_global_options",
    "budget_options",
    "budgets",
    "model_options",
    "with_model_options",
]


# The exit codes of every command (docs/settings.md, "Exit codes"): 0 ok; 1 a kernel failed (a normal verdict), or the
# doctor found something to do; 2 the call was wrong (bad task, bad option, missing file, bad settings, among
# them a database server or Dask scheduler that does not answer); 3 our own fault (the evaluator failed, a
# bug); 4 interrupted (Ctrl-C, SIGTERM) or lost a race to another command (a run resumed twice at once).
EXIT_OK, EXIT_KERNEL_FAILED, EXIT_USAGE, EXIT_INFRA, EXIT_INTERRUPTED = 0, 1, 2, 3, 4


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose errors are one line and a pointer to the command's --help, not its usage."""

    # what `error` adds to a missing-arguments message; set by the option that took their word (profile's --json)
    error_hint: str | None = None

    def error(self, message: str) -> NoReturn:
        # an option that took a word meant for an argument says so (profile's `--json TASK KERNEL`)
        hint = self.error_hint
        if hint and message.startswith("the following arguments are required"):
            message = f"{message}: {hint}"
        if message in ("argument --json: expected one argument", "argument --csv: expected one argument"):
            message += ": the file to write, or - for standard output"
        sys.stderr.write(f"{self.prog}: error: {message}\nsee `{self.prog} --help`\n")
        sys.exit(EXIT_USAGE)

    def parse_args(self, args: Iterable[str] | None = None, namespace: Any = None) -> Any:
        # argparse reports arguments that no parser took from the top parser (`see adaexplore --help`); they
        # are reported here by the subcommand they follow, whose --help lists what it takes
        words = list(sys.argv[1:] if args is None else args)
        parsed, extras = self.parse_known_args(words, namespace)
        if extras:
            self._before(words, words.index(extras[0]), parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _before(self, words: list[str], at: int, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The innermost subcommand's parser that `parsed` went through whose name comes before words[at]."""
        parser: argparse.ArgumentParser = self
        start = 0
        while True:
            subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if not subcommands:
                return parser
            name = getattr(parsed, subcommands[0].dest, None)
            if name not in subcommands[0].choices or name not in words[start:at]:
                return parser
            start = words.index(name, start) + 1
            parser = subcommands[0].choices[name]


def add_global_options(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """--config, --home, --gpus, --target and --cluster, on the top parser and (recursively) on every subcommand,
    so that they may come before or after the subcommand. Below the top they default to SUPPRESS: a subcommand that
    is not given them leaves the top parser's value alone."""
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--config", type=Path, default=default, help="settings file (TOML)")
    parser.add_argument(
        "--home",
        type=Path,
        default=default,
        help="state and cache directory (default: $ADAEXPLORE_HOME or ~/.adaexplore)",
    )
    parser.add_argument(
        "--gpus",
        type=gpu_list,
        default=default,
        metavar="LIST",
        help="the GPUs to evaluate on, by index among the visible ones, e.g. 0,2 (default: every visible GPU)",
    )
    parser.add_argument(
        "--target",
        type=target_gpu,
        default=default,
        metavar="GPU",
        help=f"the GPU that speeds of light and estimates are for: {', '.join(known_target_gpus())} (default: the "
        "GPU that evaluates, else H200)",
    )
    parser.add_argument(
        "--cluster",
        type=cluster_address,
        default=default,
        metavar="ADDRESS",
        help="evaluate on the Dask cluster whose scheduler is at ADDRESS, e.g. tcp://HOST:8786 (default: "
        "$ADAEXPLORE_CLUSTER, else this machine); `adaexplore worker` says how to start its workers",
    )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases name one parser twice
                add_global_options(sub)


def target_gpu(text: str) -> str:
    """`--target H100`: a GPU of adaexplore's table."""
    try:
        return check_target_gpu(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cluster_address(text: str) -> str:
    """`--cluster tcp://HOST:8786`: a Dask scheduler's address."""
    address = text.strip()
    if not address or any(c.isspace() for c in address):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Dask scheduler address such as tcp://HOST:8786")
    return address


def gpu_list(text: str) -> list[int]:
    """`--gpus 0,2`: distinct GPU indices, in order."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of GPU indices such as 0 or 0,2")
    gpus = [int(part) for part in parts]
    if len(set(gpus)) != len(gpus):
        raise argparse.ArgumentTypeError(f"{text!r} names a GPU twice")
    return sorted(gpus)


def _number(
    kind: type[int] | type[float], low: float, what: str, high: float | None = None
) -> Callable[[str], int | float]:
    """An argparse type: a number of `kind` in [low, high], refused with a message that says the range."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{text!r} is too large: the most is {high}")
        if value != value or value < low:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    return parse


POSITIVE_INT = _number(int, 1, "a whole number of at least 1", MAX_INTEGER)
SEED = _number(int, 0, "a seed: a whole number of at least 0", MAX_INTEGER)
POSITIVE = _number(float, 1e-12, "a number above 0")
NONNEGATIVE = _number(float, 0, "a number of at least 0")
PORT = _number(int, 0, "a port number (0 to 65535; 0 picks a free one)", 65535)


def budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget-tokens", type=POSITIVE_INT, help="stop starting steps after this many model tokens")
    parser.add_argument("--budget-usd", type=POSITIVE, help="stop starting steps after this cost (needs prices)")
    parser.add_argument("--budget-time", help="stop starting steps after this long (90s, 30m, 2h)")


def model_options(parser: argparse.ArgumentParser, *, replay: bool = True) -> None:
    group = parser.add_argument_group("model")
    default = f"default {ModelConfig.DEFAULT_MODEL} when a key or --base-url is set"
    group.add_argument(
        "--model",
        help=f"model name ({default}, else 'replay', the offline generator)"
        if replay
        else f"model name ({default}; the offline 'replay' generator cannot adapt)",
    )
    group.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: the OpenAI API)")
    group.add_argument("--api-key-env", help="environment variable holding the API key (default OPENAI_API_KEY)")
    group.add_argument("--temperature", type=NONNEGATIVE, help="sampling temperature (default 1.0)")
    group.add_argument("--reasoning-effort", choices=["minimal", "low", "medium", "high"], help="where supported")
    group.add_argument("--max-tokens", type=POSITIVE_INT, help="the most tokens per reply (default 16384)")
    group.add_argument("--timeout", type=POSITIVE, help="seconds per request (default 600)")
    group.add_argument("--concurrency", type=POSITIVE_INT, help="requests in flight at once (default 8)")
    group.add_argument("--price-input", type=NONNEGATIVE, help="USD per million input tokens, for the cost")
    group.add_argument("--price-output", type=NONNEGATIVE, help="USD per million output tokens, for the cost")


_MODEL_FLAGS = {
    "name": "--model",
    "base_url": "--base-url",
    "api_key_env": "--api-key-env",
    "temperature": "--temperature",
    "reasoning_effort": "--reasoning-effort",
    "max_tokens": "--max-tokens",
    "timeout_s": "--timeout",
    "concurrency": "--concurrency",
    "price_input_per_mtok": "--price-input",
    "price_output_per_mtok": "--price-output",
}


def with_model_options(settings: Settings, args: argparse.Namespace) -> Settings:
    updates = {
        "name": args.model,
        "base_url": args.base_url,
        "api_key_env": args.api_key_env,
        "temperature": args.temperature,
        "reasoning_effort": args.reasoning_effort,
        "max_tokens": args.max_tokens,
        "timeout_s": args.timeout,
        "concurrency": args.concurrency,
        "price_input_per_mtok": args.price_input,
        "price_output_per_mtok": args.price_output,
    }
    merged = settings.model.model_dump() | {k: v for k, v in updates.items() if v is not None}
    try:
        model = ModelConfig.model_validate(merged)
    except ValidationError as exc:
        problem = exc.errors()[0]
        field = str(problem["loc"][0]) if problem["loc"] else ""
        # the settings file was checked when it was read, so the value at fault is an option's
        shown = _MODEL_FLAGS.get(field) if updates.get(field) is not None else None
        raise ConfigError(setting_problem(problem, under=("model",), shown=shown)) from None
    if args.base_url is not None:
        model.with_base_url_source("--base-url")
    elif settings.model.base_url is not None:
        model.with_base_url_source(settings.model.base_url_source())
    return settings.model_copy(update={"model": model})


class Budgets(TypedDict):
    """The --budget-* options, as the explore, adapt and bench options take them (None: no such limit)."""

    budget_tokens: int | None
    budget_usd: float | None
    budget_seconds: float | None


def budgets(args: argparse.Namespace, settings: Settings) -> Budgets:
    from adaexplore.agent import parse_duration

    model = settings.model
    if args.budget_usd is not None and not (model.price_input_per_mtok or model.price_output_per_mtok):
        raise ConfigError(
            "--budget-usd needs the model's prices, or every call costs 0 and the budget never binds: give "
            "--price-input and --price-output (USD per million tokens), or set them under [model] in the settings file"
        )
    return {
        "budget_tokens": args.budget_tokens,
        "budget_usd": args.budget_usd,
        "budget_seconds": parse_duration(args.budget_time) if args.budget_time else None,
    }
