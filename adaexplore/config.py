"""Settings: one typed object built from per-part models, a TOML file and the environment."""

from __future__ import annotations

import os
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from adaexplore.errors import ConfigError

__all__ = [
    "AgentConfig",
    "ExecutorConfig",
    "MemoryConfig",
    "ModelConfig",
    "SearchConfig",
    "Settings",
    "StoreConfig",
    "default_home",
    "setting_problem",
]

BackendChoice = Literal["auto", "cuda", "compile", "interpret"]
ModeName = Literal["strict", "kernelbench", "paper", "flashinfer"]
SandboxChoice = Literal["auto", "bwrap", "landlock", "none"]
_SANDBOX_CHOICES: tuple[SandboxChoice, ...] = ("auto", "bwrap", "landlock", "none")
_Choice = TypeVar("_Choice", bound=str)


def _one_of(value: str, choices: tuple[_Choice, ...]) -> _Choice | None:
    """`value` as the choice it equals (a Literal's value, typed as one), or None when it is none of them."""
    return next((choice for choice in choices if choice == value), None)


def _sandbox_from_env() -> SandboxChoice:
    value = os.environ.get("ADAEXPLORE_SANDBOX", "auto").strip() or "auto"
    choice = _one_of(value, _SANDBOX_CHOICES)
    if choice is None:
        raise ConfigError(f"ADAEXPLORE_SANDBOX={value!r} is not one of {', '.join(_SANDBOX_CHOICES)}")
    return choice


_BACKEND_CHOICES: tuple[BackendChoice, ...] = ("auto", "cuda", "compile", "interpret")


def _backend_from_env() -> BackendChoice:
    value = os.environ.get("ADAEXPLORE_BACKEND", "auto").strip() or "auto"
    choice = _one_of(value, _BACKEND_CHOICES)
    if choice is None:
        raise ConfigError(f"ADAEXPLORE_BACKEND={value!r} is not one of {', '.join(_BACKEND_CHOICES)}")
    return choice


def _cluster_from_env() -> str | None:
    return os.environ.get("ADAEXPLORE_CLUSTER", "").strip() or None


def default_home() -> Path:
    """`$ADAEXPLORE_HOME`, or `~/.adaexplore`."""
    return Path(os.environ.get("ADAEXPLORE_HOME") or Path.home() / ".adaexplore")


class ExecutorConfig(BaseModel):
    """How candidates are evaluated: protocol, isolation limits and timing effort."""

    model_config = ConfigDict(extra="forbid")

    mode: ModeName = "strict"
    # The GPU that speeds are for: each task's speed of light, and the estimated time of a kernel that nothing
    # timed. "auto": the GPU that runs the evaluation, and an H200 on a machine without one. Otherwise a GPU of
    # adaexplore's table (H200, H100, H100 PCIe, A100, L40S, B200); `--target` sets it for one command.
    target_gpu: str = "auto"
    # "auto": cuda on a GPU, else compile then interpret. $ADAEXPLORE_BACKEND sets the default (a settings file
    # or --backend still wins), e.g. interpret on a machine whose cores are too few for the sm_90 compile check.
    backend: BackendChoice = Field(default_factory=lambda: _backend_from_env())
    # The static rules that keep a candidate away from the measuring code (imports, introspection,
    # monkey-patching). Turn off only for trusted code: without them a candidate can forge its result.
    enforce_policy: bool = True
    # The operating system's wall around every process that runs candidate or task code. "auto": bubblewrap
    # where it works, else Landlock with seccomp; the evaluator refuses to start when neither does. "none"
    # runs candidates with the rights of this process (logged, and named in every result's provenance).
    # $ADAEXPLORE_SANDBOX overrides it.
    sandbox: SandboxChoice = Field(default_factory=lambda: _sandbox_from_env())
    # The user (and group of the same number) that workers become when the evaluator runs as root under
    # bubblewrap: 65534 is `nobody`. None keeps them root on this machine, inside their namespaces.
    worker_uid: int | None = Field(default=65534, gt=0)
    # Host memory one worker may use (its address space on the CPU backends, its written memory on a GPU,
    # where CUDA reserves far more address space than it uses). None: a quarter of this machine's memory.
    worker_memory_bytes: int | None = Field(default=None, gt=0)
    # What the judge may keep of references (weights, inputs, outputs) between evaluations, and of the buffers
    # it shares with candidates: this share of the GPU's memory (of the host's, for the CPU judge), the rest
    # left to the candidate and to timing. judge_memory_bytes, when set, is the budget itself.
    judge_memory_share: float = Field(default=0.4, gt=0, le=0.9)
    judge_memory_bytes: int | None = Field(default=None, gt=0)
    # A worker's own Triton cache and temporary files (a size-limited memory file system under bubblewrap).
    worker_cache_bytes: int = Field(default=1 << 30, gt=0)
    # What a candidate's worker may write to its exchange directory (outputs for the judge).
    worker_disk_bytes: int = Field(default=16 << 30, gt=0)
    # Turns off the static policy and the worker's runtime guard together, to test that the sandbox holds
    # by itself. Refused unless $ADAEXPLORE_TESTING is 1: outside the tests it would let a candidate forge
    # its result.
    disable_guards_for_tests: bool = False
    # Larger sources are refused before any process starts; real kernels are a few kB.
    max_source_bytes: int = Field(default=1_000_000, gt=0)
    # Import, construction and Triton compilation of a candidate (autotuned kernels compile many configs).
    load_timeout_s: float = Field(default=180.0, gt=0)
    # One forward call. A hung kernel is killed after this long.
    trial_timeout_s: float = Field(default=60.0, gt=0)
    # The whole timing phase of one candidate.
    timing_timeout_s: float = Field(default=180.0, gt=0)
    # What one MCP compile_and_profile call (and `adaexplore profile` on the CPU backends at small sizes) lets the
    # candidate take, so that the call returns before a client's request timeout (60 s in the TypeScript SDK)
    # whatever the kernel does: a kernel that hangs is a `timeout` within it, in whichever phase. On a GPU, wall
    # time over all its phases; on the CPU backends, the time its own code runs in every phase, the sm_90 compile
    # check included: its worker's CPU time (read from the system) and its wall time, whichever runs out first,
    # the Triton compiler's time not counted. The reference's work is not counted. None: each phase's own
    # timeout only.
    call_budget_s: float | None = Field(default=40.0, gt=0)
    # The same for an evaluation no client waits on (a headless explore's steps, a bench's problems), in CPU time
    # alone on the CPU backends, so that a busy machine changes no verdict. None (the default): on a GPU each
    # phase its own timeout, as KernelBench's protocol has no call budget (room for an autotune of twenty configs
    # at full size); on the CPU backends at small sizes, call_budget_s.
    protocol_budget_s: float | None = Field(default=None, gt=0)
    # Pre-started candidate workers kept ready per backend (per GPU for `cuda`). Starting one costs seconds of
    # CPU (importing torch and triton, making the CUDA context), so more cores keep more ready. None: from the
    # machine, one per four of a GPU's share of the cores this process may use (all of them without a GPU), at
    # least 1 and at most 4. On a GPU machine with at least 8 cores (and 4 left besides 2 per GPU), two cores per
    # GPU run its judge and the candidate being timed, and workers start on the others, so no measurement waits
    # for a start; on fewer cores the reference is timed only once no spare is starting.
    warm_workers: int | None = Field(default=None, ge=0, le=16)
    # Evaluations that may hold a candidate worker at once, per backend (per GPU for `cuda`).
    max_concurrent: int = Field(default=4, ge=1, le=64)
    # After an evaluation on fresh seeds (strict mode), the judge builds the reference of the task's next one on
    # new secret seeds while it is idle, so that evaluation finds it ready; each set of seeds still serves one
    # evaluation. None: on the `cuda` backend only (on the CPU backends the reference is cheap beside the rest).
    reference_ahead: bool | None = None
    # The GPUs to evaluate on, by their index among the visible ones (after CUDA_VISIBLE_DEVICES); each gets its
    # own judge and worker pool, and an evaluation goes to the one with the fewest under way. None: every
    # visible GPU. `--gpus 0,2` on the command line.
    gpus: list[int] | None = None
    # Shared memory per block on the compile target (H100/H200: 227 KiB); `compile` rejects more.
    shared_memory_limit: int = Field(default=232448, gt=0)
    # Timing effort of the `strict` protocol: total measured time per model, and its bounds in repetitions.
    # On an H200, 200 ms kept five evaluations of one candidate within 0.3 % of each other (400 ms: 0.06 %)
    # at 0.23 s less per evaluation; see benchmarks/README.md.
    timing_budget_ms: float = Field(default=200.0, gt=0)
    min_reps: int = Field(default=30, ge=5)
    max_reps: int = Field(default=2000, ge=5)
    # Outputs of this many timed calls, chosen at random as each call returns, are checked again against the
    # reference, in every protocol: 44 catch a kernel wrong in one call in ten with probability 0.99
    # (1 - 0.9 ** 44). Where whole copies of their outputs would take more than `recheck_bytes`, each call
    # keeps `recheck_sample` elements of each output, at positions drawn after the call (a flag says so).
    recheck_reps: int = Field(default=44, ge=0, le=256)
    recheck_bytes: int = Field(default=4 << 30, ge=1 << 12)
    recheck_sample: int = Field(default=1 << 20, ge=16)
    # Time candidates on the CPU too (interpret backend). The numbers say nothing about a GPU; this exists
    # to exercise the timing pipeline where no GPU is present.
    time_on_cpu: bool = False
    # Captured stdout/stderr of a candidate kept in a result (head and tail).
    output_limit_bytes: int = Field(default=16384, ge=256)
    # Where the per-GPU lock files live, so that every adaexplore process on the machine (the MCP server,
    # headless runs, benchmarks) measures on a GPU alone. None: adaexplore-device-locks in the temp directory.
    device_lock_dir: Path | None = None
    # A Dask scheduler's address (tcp://HOST:8786): evaluations run on its workers, each started with
    # `dask worker ADDRESS --preload adaexplore.cluster`, and come back to this process, which keeps the store.
    # None: this machine evaluates. $ADAEXPLORE_CLUSTER sets it; `--cluster` on the command line.
    cluster: str | None = Field(default_factory=lambda: _cluster_from_env())
    # How long connecting to the cluster, and waiting for a worker with adaexplore's plugin, may take before
    # the search stops with an error (it never falls back to evaluating here).
    cluster_timeout_s: float = Field(default=20.0, gt=0)

    @model_validator(mode="after")
    def _guards_only_in_tests(self) -> ExecutorConfig:
        if self.disable_guards_for_tests and os.environ.get("ADAEXPLORE_TESTING") != "1":
            raise ValueError(
                "disable_guards_for_tests turns off the policy and the runtime guard, which only the test suite "
                "may do (it sets ADAEXPLORE_TESTING=1); use enforce_policy = false for trusted code instead"
            )
        return self

    @field_validator("cluster")
    @classmethod
    def _cluster_address(cls, address: str | None) -> str | None:
        if address is None:
            return None
        address = address.strip()
        if not address or any(c.isspace() for c in address):
            raise ValueError(f"{address!r} is not a Dask scheduler address; write it as tcp://HOST:8786")
        return address

    @field_validator("gpus")
    @classmethod
    def _gpu_list(cls, gpus: list[int] | None) -> list[int] | None:
        if gpus is None:
            return None
        if not gpus:
            raise ValueError("gpus is empty; name at least one GPU (0 is the first visible one), or leave it unset")
        if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
            raise ValueError(f"gpus {gpus} must be distinct indices of visible GPUs, 0 for the first")
        return sorted(gpus)

    @property
    def policy_on(self) -> bool:
        return self.enforce_policy and not self.disable_guards_for_tests


class SearchConfig(BaseModel):
    """The tree search. Defaults are AdaExplore's released KernelBench Level 2 configuration; the four
    improvements over the paper are on, and `preset = "paper"` turns them off."""

    model_config = ConfigDict(extra="forbid")

    preset: Literal["default", "paper"] = "default"
    # UCT constant w in Q + w*sqrt(ln N(parent) / N(child)).
    exploration_weight: float = Field(default=0.3, ge=0)
    # w_e = w * ratio in the expand score; the released Level 3 (model-level) runs used 0.5.
    expand_exploration_ratio: float = Field(default=1.0, ge=0)
    # Q = alpha*max + (1 - alpha)*mean of a child's rewards; released runs use the mean.
    reward_alpha: float = Field(default=0.0, ge=0, le=1)
    # Probability of a large step at a node other than the root.
    p_large: float = Field(default=0.2, ge=0, le=1)
    # A node takes a large step once it has this many small-step children.
    small_step_limit: int = Field(default=2, ge=0)
    # Working memory of a small step: the last nodes of the segment.
    memory_rounds: int = Field(default=5, ge=1)
    # Representative kernels in a large step's pool, one per segment on the path.
    pool_size: int = Field(default=5, ge=0)
    # Beyond the paper: where the path's representatives leave room in the pool, the best kernels of the run's
    # other branches fill it, fastest first, so a large step from the root sees what the run has found (the
    # released configuration shows it an empty pool).
    pool_other_branches: bool = True
    # With pool_other_branches off: the authors' random off-path extras (0: off, as released for KernelBench),
    # their count distribution, and the softmax temperature over speedup used to draw them.
    pool_extra_max: int = Field(default=0, ge=0)
    geometric_p: float = Field(default=0.6, gt=0, lt=1)
    softmax_temperature: float = Field(default=1.0, gt=0)
    # Evaluations per run.
    total_steps: int = Field(default=50, ge=1)
    # Beyond the paper: a child whose code equals an evaluated one reuses that evaluation.
    reuse_identical: bool = True
    # Beyond the paper: at the end of a run the best k candidates are evaluated again in fresh processes
    # with fresh seeds and the winner is chosen on those numbers (0: off).
    final_reevaluation: int = Field(default=3, ge=0)
    # The speedup at which the reward stops rising (the paper: 10); None: it keeps rising.
    reward_cap: float | None = None

    @model_validator(mode="after")
    def _apply_preset(self) -> SearchConfig:
        if self.preset != "paper":
            return self
        changed = [
            name
            for name, paper in (
                ("reuse_identical", False),
                ("final_reevaluation", 0),
                ("reward_cap", 10.0),
                ("pool_other_branches", False),
            )
            if name in self.model_fields_set and getattr(self, name) != paper
        ]
        if changed:
            raise ValueError(
                f"preset 'paper' fixes {', '.join(changed)} to the authors' values; remove "
                f"{'them' if len(changed) > 1 else 'it'} or use preset 'default'"
            )
        self.reuse_identical, self.final_reevaluation, self.reward_cap = False, 0, 10.0
        self.pool_other_branches = False
        return self


class MemoryConfig(BaseModel):
    """The skill memory: when a rule is injected and how failures merge into rules."""

    model_config = ConfigDict(extra="forbid")

    # "paper": a rule is injected on its occurrences alone (3), as the authors counted, whatever its scope,
    # and every such rule is injected, in the order the rules were made (the authors' file order).
    preset: Literal["default", "paper"] = "default"
    min_occurrences: int = Field(default=3, ge=1)
    # Distinct tasks a rule must have been seen in; one task's repeated mistake is not yet a general rule.
    min_tasks: int = Field(default=2, ge=1)
    # Token overlap (Jaccard) at which a new rule's text is taken to be an existing rule.
    similarity_threshold: float = Field(default=0.6, gt=0, le=1)
    # Below the threshold but above this, a configured model judge decides.
    judge_floor: float = Field(default=0.3, ge=0, le=1)
    # Rules in a prompt block, most frequent first; None: no limit (the paper preset's choice).
    max_rules: int | None = Field(default=60, ge=1)

    @model_validator(mode="after")
    def _apply_preset(self) -> MemoryConfig:
        if self.preset == "paper":
            if "min_tasks" in self.model_fields_set and self.min_tasks != 1:
                raise ValueError("preset 'paper' counts occurrences only (min_tasks 1); remove min_tasks")
            self.min_tasks = 1
            if "max_rules" not in self.model_fields_set:
                self.max_rules = None
        return self


class ModelConfig(BaseModel):
    """The built-in model client: any OpenAI-compatible chat-completions endpoint."""

    model_config = ConfigDict(extra="forbid")

    DEFAULT_MODEL: ClassVar[str] = "gpt-5-mini"

    # The model name the endpoint knows. "replay" is the offline generator, which serves the sample kernels
    # beside example tasks and is not a language model. Unset: DEFAULT_MODEL when an API key or a base URL is
    # configured, else "replay".
    name: str | None = None
    # None: the OpenAI API (or $OPENAI_BASE_URL, as the openai SDK reads it).
    base_url: str | None = None
    # The environment variable that holds the API key.
    api_key_env: str = "OPENAI_API_KEY"
    # Sent with every request (the authors' client always sent 1.0, whatever was configured).
    temperature: float | None = Field(default=1.0, ge=0, le=2)
    # Sent only when set, for endpoints that support it.
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    # The most tokens one reply may hold (max_completion_tokens).
    max_tokens: int = Field(default=16384, ge=16)
    # One request, from sending to the last byte of the reply.
    timeout_s: float = Field(default=600.0, gt=0)
    # Retries of one request after a 429, a 5xx, a timeout or a dropped connection, with exponential backoff.
    max_retries: int = Field(default=5, ge=0, le=20)
    backoff_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=60.0, ge=0)
    # Requests in flight at once, over all tasks of a process.
    concurrency: int = Field(default=8, ge=1, le=256)
    # Prices in USD per million tokens, for the cost accounting (0: not counted).
    price_input_per_mtok: float = Field(default=0.0, ge=0)
    price_output_per_mtok: float = Field(default=0.0, ge=0)
    # Where base_url was set ("--base-url", "base_url in settings file X"), for messages that name what to fix.
    _base_url_source: str | None = PrivateAttr(default=None)

    def with_base_url_source(self, source: str) -> ModelConfig:
        self._base_url_source = source
        return self

    def base_url_source(self) -> str:
        """What set the endpoint's address, in the words of what to change."""
        if self.base_url is not None:
            return self._base_url_source or "--base-url (or base_url under [model] in the settings file)"
        if os.environ.get("OPENAI_BASE_URL"):
            return "the environment variable OPENAI_BASE_URL"
        return "--base-url (unset, so the OpenAI API)"

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"the base URL {value!r} has no scheme; write it as http://HOST:PORT/v1 (or https://...)")
        return value

    def resolved_name(self) -> str:
        """The model to use: the configured name, else DEFAULT_MODEL when a key or base URL is set, else replay."""
        if self.name:
            return self.name
        if self.base_url or os.environ.get(self.api_key_env) or os.environ.get("OPENAI_BASE_URL"):
            return self.DEFAULT_MODEL
        return "replay"


class AgentConfig(BaseModel):
    """The headless loop around the model: how replies become kernels, and what it records."""

    model_config = ConfigDict(extra="forbid")

    # Model calls per step that may go back to the model with what was wrong with its reply (no code, code
    # that does not parse, edits that do not apply, a reply cut off at max_tokens) before the step is given up.
    max_attempts: int = Field(default=2, ge=1, le=10)
    # Steps given up in a row (no usable reply at all) after which a run stops with a message.
    max_failed_steps: int = Field(default=5, ge=1)
    # The reviewer's call before each small step (skipped when every kernel in the working memory failed,
    # as the authors do).
    reviewer: bool = True
    # Distill failed evaluations into rules of the skill memory as the run goes.
    memory_updates: bool = True
    # Statuses whose failures are distilled; a wrong result rarely teaches a general rule (the authors'
    # online default skips them too).
    distill_statuses: list[str] = Field(
        default_factory=lambda: ["syntax_error", "compile_error", "runtime_error", "rejected", "timeout", "crashed"]
    )
    # Evaluations of each synthetic task in `adapt`.
    adapt_steps: int = Field(default=10, ge=1)


class StoreConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # sqlite:///path/to/file.db; unset: $ADAEXPLORE_DB, else sqlite:///$ADAEXPLORE_HOME/adaexplore.db.
    url: str | None = None


class Settings(BaseModel):
    """All settings of adaexplore."""

    model_config = ConfigDict(extra="forbid")

    home: Path = Field(default_factory=default_home)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def database_url(self) -> str:
        return self.store.url or os.environ.get("ADAEXPLORE_DB") or f"sqlite:///{self.home / 'adaexplore.db'}"

    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        """Settings from a TOML file (when given) over the defaults.

        Raises:
            ConfigError: the file is missing, is not TOML, or holds an unknown or invalid setting.
        """
        if path is None:
            return cls()
        if not path.is_file():
            raise ConfigError(f"settings file {path} does not exist")
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"settings file {path} is not valid TOML: {exc}") from exc
        try:
            settings = cls.model_validate(data)
        except ValidationError as exc:
            problems = [setting_problem(problem) for problem in exc.errors()]
            raise ConfigError(f"settings file {path}:\n  " + "\n  ".join(problems)) from None
        if settings.model.base_url is not None:
            settings.model.with_base_url_source(f"base_url under [model] in the settings file {path}")
        return settings


def _section(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The settings model a key path ends in (None where it leads into a value, not a table)."""
    model: type[BaseModel] = Settings
    for part in loc:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _without_none(annotation: Any) -> tuple[Any, bool]:
    """`X | None` as (X, True); anything else as (it, False)."""
    arguments = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        rest = [a for a in arguments if a is not type(None)]
        if len(rest) == 1:
            return rest[0], len(rest) < len(arguments)
    return annotation, False


def _field_type(loc: tuple[int | str, ...]) -> tuple[Any, list[Any]] | None:
    """The type a key path names, with its bounds (a list's item for an index into it); None when the path
    names no setting."""
    annotation: Any = Settings
    metadata: list[Any] = []
    for part in loc:
        inner, _ = _without_none(annotation)
        if isinstance(part, int) and typing.get_origin(inner) is list:
            annotation, metadata = typing.get_args(inner)[0], []
        elif isinstance(inner, type) and issubclass(inner, BaseModel) and str(part) in inner.model_fields:
            field = inner.model_fields[str(part)]
            annotation, metadata = field.annotation, list(field.metadata)
        else:
            return None
    return annotation, metadata


_BOUNDS = (("ge", "at least"), ("gt", "above"), ("le", "at most"), ("lt", "below"))


def _expected(annotation: Any, metadata: list[Any]) -> str:
    """What a setting of this type takes, in the words of a TOML file."""
    inner, optional = _without_none(annotation)
    unset = " (or leave the key out)" if optional else ""
    if typing.get_origin(inner) is Literal:
        choices = [repr(c) for c in typing.get_args(inner)]
        return f"one of {', '.join(choices[:-1])} or {choices[-1]}{unset}" if len(choices) > 1 else choices[0]
    if typing.get_origin(inner) is list:
        item = _expected(typing.get_args(inner)[0], [])
        example = "[0, 2]" if "number" in item else '["first", "second"]'
        return f"a list in brackets, each item {item}, such as {example}{unset}"
    words = {
        bool: "true or false",
        int: "a whole number",
        float: "a number",
        str: "text in quotes",
        Path: "a path in quotes",
    }.get(inner)
    if words is None:
        words = "a table" if isinstance(inner, type) and issubclass(inner, BaseModel) else "a value of its own kind"
    bounds = [
        f"{phrase} {getattr(bound, name)}"
        for bound in metadata
        for name, phrase in _BOUNDS
        if getattr(bound, name, None) is not None
    ]
    return words + (f" {' and '.join(bounds)}" if bounds else "") + unset


def _toml(value: Any) -> str:
    """A value as the settings file wrote it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "a table"
    return repr(value)


def setting_problem(problem: Any, *, under: tuple[str, ...] = (), shown: str | None = None) -> str:
    """One problem of a pydantic validation of the settings, in our own words: the key, what is wrong, what is
    allowed (never pydantic's text, which names Python's types and links its own documentation). `under`: the
    path of the part validated (("model",) for a ModelConfig); `shown`: what to call the key instead of its
    dotted path (a command-line option)."""
    loc = (*under, *problem["loc"])
    key = shown or "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "(top level)"
    kind = problem["type"]
    given = f"{key} {_toml(problem.get('input'))}" if shown else f"{key} = {_toml(problem.get('input'))}"
    if kind == "extra_forbidden":
        table = _section(loc[:-1])
        where = f"[{'.'.join(map(str, loc[:-1]))}]" if loc[:-1] else "the top level"
        allowed = ", ".join(sorted(table.model_fields)) if table is not None else ""
        return f"unknown key {key!r}; the keys of {where} are: {allowed}"
    if kind == "literal_error":
        expected = problem.get("ctx", {}).get("expected", "")
        return f"{given} is not allowed; it must be one of {expected}"
    bound = problem.get("ctx", {})
    for name, words in _BOUNDS:
        if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than") and name in bound:
            return f"{given} is out of range; it must be {words} {bound[name]}"
    if kind == "model_type":
        return f"{key} must be a table: write [{key}] on a line of its own, then its keys as `name = value` lines"
    if kind == "value_error":  # our own validators' words
        message = str(problem["msg"]).removeprefix("Value error, ")
        if isinstance(problem.get("input"), dict):
            return f"[{key}]: {message}" if loc else message
        return f"{given}: {message}"
    # a value of the wrong type (text for a number, a number for a list, ...): what the key takes, from its type
    found = _field_type(loc)
    expected = _expected(*found) if found is not None else "a value of the kind its key takes"
    return f"{given} is not allowed; it must be {expected}"
