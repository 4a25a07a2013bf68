"""`[tool.agent_eval]` settings: one pydantic model, four layers, errors that name the key.

Precedence, highest first: command line > environment > `[tool.agent_eval]` in pyproject.toml >
defaults. The keys are those of pytest-agent-eval, so an existing section keeps working.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._hints import did_you_mean
from ..errors import ConfigError
from .groups import GroupConfig, parse_groups

__all__ = [
    "DEFAULT_RUNS",
    "DEFAULT_THRESHOLD",
    "ENV_VARS",
    "AgentEvalSettings",
    "MarkerOptions",
    "find_pyproject",
    "is_transcript_file",
    "marker_options",
    "resolve_settings",
]

DEFAULT_THRESHOLD = 0.8
"""`[tool.agent_eval] threshold`'s default: the fraction of runs that must pass (pytest-agent-eval's)."""
DEFAULT_RUNS = 1
"""`[tool.agent_eval] runs`'s default."""


class AgentEvalSettings(BaseModel):
    """The resolved settings of a test session."""

    # built on first validation, not at import: building the process's first pydantic model loads
    # every installed pydantic plugin (logfire's: ~0.5 s), and a session with no settings needs none
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    model: str | None = None
    """pydantic-ai model id of the judges (`JudgeEvaluator`, YAML `judge:`) when they name none."""
    judge_model: str | None = None
    """A dedicated judge model; takes priority over `model`."""
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=0.0, le=1.0)
    """Default fraction of runs that must pass."""
    runs: int = Field(default=DEFAULT_RUNS, ge=1)
    """Default number of runs of each transcript."""
    retries: int = Field(default=2, ge=0)
    """Retries of a failed judge call, for the judges of `Expect.judge` and `tool_calls_args` (YAML
    `judge:`) that set no `retries` (pytest-agent-eval's meaning)."""
    timeout: float = Field(default=30.0, gt=0)
    """Seconds per judge call, for the same judges when they set no `timeout` (pytest-agent-eval's meaning)."""
    agent_timeout: float | None = Field(default=None, gt=0)
    """Seconds the agent may take to answer one turn; None: no limit."""
    agent_retries: int = Field(default=0, ge=0)
    """Times a run is retried from its first turn when the agent raises or exceeds `agent_timeout`."""
    yaml_dirs: list[str] = Field(default_factory=lambda: ["tests/evals"])
    """Directories (relative to the project root) whose `*.yaml` files are transcripts."""
    report_path: str | None = None
    """Write a markdown report here at the end of the session."""
    live: bool = False
    """Run `agent_eval` tests without `--agent-eval-live` / `EVAL_LIVE=1`."""
    not_evaluated: Literal["fail", "skip"] = "fail"
    """How a check that could not run on the data (outcome `not_evaluated`) counts: `fail` fails its
    turn; `skip` leaves it out of the verdict (a test where no check was evaluated is skipped)."""
    record: bool = False
    """Save every eval run's spans under `record_dir` (also `--tracegrade-record`); implies `live`."""
    record_dir: str = "fixtures/traces"
    """Where recorded runs go (relative to the project root), and where `recorded_trace` looks."""
    groups: tuple[GroupConfig, ...] = ()
    """Quality gates from `[tool.agent_eval.groups]` (see `tracegrade.pytest_plugin.groups`); pyproject only."""


_KEYS = tuple(AgentEvalSettings.model_fields)
ENV_VARS: dict[str, str] = {key: f"AGENT_EVAL_{key.upper()}" for key in _KEYS if key != "groups"}
_ENV_ALIASES = {"EVAL_LIVE": "live"}
_BOOL_KEYS = frozenset({"live", "record"})
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


@dataclass(frozen=True, slots=True)
class _Layer:
    source: str
    values: Mapping[str, Any]


def find_pyproject(rootpath: Path, inipath: Path | None) -> Path | None:
    """The project's pyproject.toml: pytest's ini file when it is one, else `rootpath/pyproject.toml`."""
    if inipath is not None and inipath.name == "pyproject.toml":
        return inipath
    candidate = rootpath / "pyproject.toml"
    return candidate if candidate.is_file() else None


def is_transcript_file(file_path: Path, yaml_dirs: Sequence[Path]) -> bool:
    """Whether pytest should collect `file_path` as a YAML transcript (a `.yaml`/`.yml` under `yaml_dirs`)."""
    if file_path.suffix not in (".yaml", ".yml"):
        return False
    resolved = file_path.resolve()
    return any(resolved.is_relative_to(d) for d in yaml_dirs)


def _pyproject_layer(path: Path | None, unknown: list[str] | None = None) -> _Layer:
    if path is None:
        return _Layer("defaults", {})
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from None
    section = data.get("tool", {}).get("agent_eval", {})
    if not isinstance(section, dict):
        raise ConfigError(f"[tool.agent_eval] in {path} must be a table, got {type(section).__name__}")
    source = f"[tool.agent_eval] in {path}"
    values = dict(section)
    for key in section:
        if key not in _KEYS:
            message = f"{source}: unknown key {key!r}{_did_you_mean(key, _KEYS)}"
            if unknown is None:
                raise ConfigError(message)
            unknown.append(message)
            del values[key]
    if "groups" in values:
        values["groups"] = tuple(parse_groups(values["groups"], str(path)))
    return _Layer(source, values)


def _env_layer(environ: Mapping[str, str]) -> list[_Layer]:
    layers = []
    names = {**{v: k for k, v in ENV_VARS.items()}, **_ENV_ALIASES}
    for var, key in names.items():
        raw = environ.get(var)
        if raw is None:
            continue
        value: Any = raw
        if key in _BOOL_KEYS:
            low = raw.strip().lower()
            if low not in _TRUE | _FALSE:
                raise ConfigError(f"{var}={raw!r} (environment): expected 1/0, true/false, yes/no or on/off")
            value = low in _TRUE
            if key == "live" and not value and var == "EVAL_LIVE":
                continue  # EVAL_LIVE=0 means "not asked for", not "forbid live"
        elif key == "yaml_dirs":
            value = [p for p in raw.split(os.pathsep) if p]
        elif raw == "" and key in ("model", "judge_model", "report_path", "agent_timeout"):
            value = None
        layers.append(_Layer(f"{var} (environment)", {key: value}))
    return layers


def _did_you_mean(name: str, choices: Any) -> str:
    return did_you_mean(name, choices)


def resolve_settings(
    pyproject: Path | None,
    environ: Mapping[str, str] | None = None,
    cli: Mapping[str, Any] | None = None,
    *,
    unknown_keys: list[str] | None = None,
) -> tuple[AgentEvalSettings, dict[str, str]]:
    """Merge defaults < pyproject < environment < command line; return the settings and where
    each non-default key came from. Raises `ConfigError` naming the first invalid key; a key of
    `[tool.agent_eval]` that is no setting is one too, unless `unknown_keys` is given: then the
    message naming it (and the closest key) is appended there and the key is left out."""
    layers = [_pyproject_layer(pyproject, unknown_keys), *_env_layer(os.environ if environ is None else environ)]
    layers.append(_Layer("command line", {k: v for k, v in (cli or {}).items() if v is not None}))
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for layer in layers:
        for key, value in layer.values.items():
            merged[key] = value
            sources[key] = layer.source
    if not merged:  # nothing configured: the defaults, unvalidated (a test checks they are the validated ones)
        return AgentEvalSettings.model_construct(), sources
    try:
        settings = AgentEvalSettings.model_validate(merged)
    except ValidationError as e:
        err = e.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else "?"
        where = sources.get(key, "defaults")
        raise ConfigError(
            f"invalid agent_eval setting {key!r} = {err.get('input')!r} ({where}): {err['msg']}"
        ) from None
    return settings, sources


@dataclass(frozen=True, slots=True)
class MarkerOptions:
    """What `@pytest.mark.agent_eval(...)` sets, with the session settings filled in."""

    threshold: float
    runs: int
    tags: list[str] = field(default_factory=list)


_MARKER_KEYS = ("threshold", "runs", "tags")


def marker_options(args: tuple[Any, ...], kwargs: Mapping[str, Any], settings: AgentEvalSettings) -> MarkerOptions:
    """Validate a marker's arguments (`ConfigError` naming the bad one) and apply the defaults."""
    if args:
        raise ConfigError(
            f"@pytest.mark.agent_eval takes keyword arguments only ({', '.join(_MARKER_KEYS)}), got {args!r}"
        )
    for key in kwargs:
        if key not in _MARKER_KEYS:
            raise ConfigError(f"@pytest.mark.agent_eval: unknown argument {key!r}{_did_you_mean(key, _MARKER_KEYS)}")
    threshold = kwargs.get("threshold")
    runs = kwargs.get("runs")
    tags = kwargs.get("tags") or []
    if threshold is None:
        threshold = settings.threshold
    elif isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"@pytest.mark.agent_eval: threshold must be a number between 0 and 1, got {threshold!r}")
    if runs is None:
        runs = settings.runs
    elif isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ConfigError(f"@pytest.mark.agent_eval: runs must be an integer >= 1, got {runs!r}")
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise ConfigError(f"@pytest.mark.agent_eval: tags must be a list of strings, got {tags!r}")
    return MarkerOptions(float(threshold), runs, list(tags))
