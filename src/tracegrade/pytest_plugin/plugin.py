"""pytest hooks, options and fixtures (the `pytest11` entry point). Thin: the logic lives in
`config`, `session`, `transcript`, `yaml_collect` and `report`."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..capture import capture
from ..errors import ConfigError
from .config import (
    AgentEvalSettings,
    MarkerOptions,
    find_pyproject,
    is_transcript_file,
    marker_options,
    resolve_settings,
)

if TYPE_CHECKING:
    from ..reporting import FileFormat, Report
    from ..tree import SpanTree
    from .record import TraceRecorder
    from .session import EvalSession, TranscriptResult

# pytest loads this module in every session of every project tracegrade is installed in: the
# session, report, recorder and YAML modules (evaluators, judges, transcript models, PyYAML) are
# imported by the hooks and fixtures that use them, so a session that grades nothing pays ~50 ms.

__all__ = ["SKIP_REASON", "agent_eval", "llm_eval_agent", "recorded_trace", "span_capture"]

SKIP_REASON = "agent_eval test not run: pass --agent-eval-live or set EVAL_LIVE=1"
_WORKER_KEY = "tracegrade_agent_eval_records"
_RECORDED_KEY = "tracegrade_agent_eval_recorded"


@dataclass
class _State:
    settings: AgentEvalSettings
    yaml_dirs: list[Path]
    record_dir: Path
    recorder: TraceRecorder | None = None
    recorded: int = 0
    """Runs the xdist workers recorded (the controller's own are in `recorder.written`)."""
    records: list[dict[str, Any]] = field(default_factory=list)
    """`reporting.CaseRecord.to_dict()` of every `agent_eval.run(...)` (JSON-safe, for xdist)."""
    skipped: int = 0
    reports: dict[FileFormat, str] = field(default_factory=dict)
    """Report files to write, by format (`markdown`, `json`, `junit`, `html`)."""
    reports_written: list[Path] = field(default_factory=list)
    redact: list[str] = field(default_factory=list)
    """Key globs whose values the reports hide (`--agent-eval-redact`)."""


_STATE = pytest.StashKey[_State]()
_OPTIONS = pytest.StashKey[MarkerOptions]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agent_eval", "agent evaluations (tracegrade)")
    group.addoption(
        "--agent-eval-live",
        action="store_true",
        default=None,
        help="run tests marked agent_eval (skipped by default; also EVAL_LIVE=1 or live = true in [tool.agent_eval])",
    )
    group.addoption(
        "--agent-eval-report",
        metavar="PATH",
        default=None,
        help="write a markdown report of every agent_eval test to PATH (overrides [tool.agent_eval] report_path)",
    )
    for fmt, what in (("json", "a JSON"), ("junit", "a JUnit XML"), ("html", "a self-contained HTML")):
        group.addoption(
            f"--agent-eval-{fmt}",
            metavar="PATH",
            default=None,
            help=f"write {what} report of every agent_eval test to PATH (merged across xdist workers)",
        )
    group.addoption(
        "--agent-eval-redact",
        action="append",
        default=[],
        metavar="KEY_GLOB",
        help="hide argument and attribute values under keys matching KEY_GLOB in every report (repeatable)",
    )
    group.addoption(
        "--tracegrade-record",
        action="store_true",
        default=None,
        help="save each agent_eval run's spans as OTLP/JSON under fixtures/traces/ "
        "(record_dir in [tool.agent_eval]); implies --agent-eval-live",
    )
    group.addoption(
        "--agent-eval-model",
        metavar="MODEL",
        default=None,
        help="pydantic-ai model id of the judges (overrides [tool.agent_eval] model)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "agent_eval(threshold=None, runs=None, tags=None): an agent evaluation, run `runs` times, passing when "
        "the fraction of passing runs reaches `threshold`; skipped unless --agent-eval-live or EVAL_LIVE=1.",
    )
    pyproject = find_pyproject(config.rootpath, config.inipath)
    cli = {
        "live": config.getoption("agent_eval_live"),
        "report_path": config.getoption("agent_eval_report"),
        "model": config.getoption("agent_eval_model"),
        "record": config.getoption("tracegrade_record"),
    }
    unknown: list[str] = []
    try:
        settings, _ = resolve_settings(pyproject, os.environ, cli, unknown_keys=unknown)
    except ConfigError as e:
        raise pytest.UsageError(str(e)) from None
    for message in unknown:  # a typo matters only when evals run: then it stops the session
        if settings.live or settings.record:
            raise pytest.UsageError(message)
        config.issue_config_time_warning(pytest.PytestConfigWarning(f"{message}; ignored: live mode is off"), 2)
    root = pyproject.parent if pyproject is not None else config.rootpath
    record_dir = (root / settings.record_dir).resolve()
    recorder = None
    if settings.record:
        from .record import TraceRecorder

        recorder = TraceRecorder(record_dir, config.rootpath)
    state = _State(settings, [(root / d).resolve() for d in settings.yaml_dirs], record_dir, recorder)
    state.reports = {"markdown": settings.report_path} if settings.report_path else {}
    formats: tuple[FileFormat, ...] = ("json", "junit", "html")
    for fmt in formats:
        if path := config.getoption(f"agent_eval_{fmt}"):
            state.reports[fmt] = path
    state.redact = list(config.getoption("agent_eval_redact") or [])
    config.stash[_STATE] = state
    config.pluginmanager.register(_Reporter(config), "tracegrade-agent-eval-reporter")
    if settings.groups:
        from .groups import install_groups

        install_groups(config, settings.groups)


def _state(config: pytest.Config) -> _State:
    return config.stash[_STATE]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(_STATE, None)
    if state is None or not state.yaml_dirs or not is_transcript_file(file_path, state.yaml_dirs):
        return None
    from .yaml_collect import AgentEvalFile

    return AgentEvalFile.from_parent(parent, path=file_path)


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so tags can be selected with -k
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _state(config)
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        marker = item.get_closest_marker("agent_eval")
        if marker is None:
            if "agent_eval" in getattr(item, "fixturenames", ()) and not (state.settings.live or state.settings.record):
                item.add_marker(skip)  # the fixture runs agents: gated like the marker
            continue
        live = state.settings.live or state.settings.record
        try:
            options = marker_options(marker.args, marker.kwargs, state.settings)
        except ConfigError as e:  # only an eval that runs is stopped by its marker's mistake
            if live:
                raise pytest.UsageError(f"{item.nodeid}: {e}") from None
            item.warn(pytest.PytestConfigWarning(f"{e}; ignored: live mode is off"))
            item.add_marker(skip)
            continue
        item.stash[_OPTIONS] = options
        item.extra_keyword_matches.update(options.tags)
        if not live:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests marked agent_eval that no async plugin claimed: pytest-asyncio has
    already replaced the coroutine function of the items it runs, anyio runs those with an
    `anyio_backend` argument."""
    if pyfuncitem.get_closest_marker("agent_eval") is None or not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    if "anyio_backend" in pyfuncitem.funcargs:
        return None
    kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**kwargs))
    return True


class _Reporter:
    """Per-session hooks that need the session's state: skip counting, xdist merging, reports."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = _state(config)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        longrepr = report.longrepr
        is_skip = report.skipped and report.when == "setup" and isinstance(longrepr, tuple)
        if is_skip and SKIP_REASON in str(longrepr[2]):  # type: ignore[index]
            self.state.skipped += 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """xdist controller: take the records a worker finished with."""
        data = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
        if data:
            self.state.records.extend(json.loads(data))
        self.state.recorded += int(getattr(node, "workeroutput", {}).get(_RECORDED_KEY, 0))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = self.state
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller reports
            workeroutput[_WORKER_KEY] = json.dumps(state.records)
            workeroutput[_RECORDED_KEY] = len(state.recorder.written) if state.recorder else 0
            return
        if state.reports and (state.records or state.skipped):
            from ..reporting import write, write_markdown

            report = _report(state)
            for fmt, name in state.reports.items():
                path = Path(name)
                if not path.is_absolute():
                    path = self.config.rootpath / path
                path.parent.mkdir(parents=True, exist_ok=True)
                if fmt == "markdown":  # the groups between the summary and the details, as pytest-agent-eval
                    text = write_markdown(report, [groups] if (groups := self._groups_markdown()) else [])
                else:
                    text = write(report, fmt)
                path.write_text(text, encoding="utf-8")
                state.reports_written.append(path)

    def _groups_markdown(self) -> str:
        """The `## Groups` section of the markdown report, as pytest-agent-eval writes it (empty without groups)."""
        gate = self.config.pluginmanager.get_plugin("tracegrade-agent-eval-groups")
        if gate is None or not gate.outcomes:
            return ""
        from .groups import build_group_markdown_lines

        return "\n".join(build_group_markdown_lines(gate.results()))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        if state.records:
            from ..reporting.terminal import case_lines

            terminalreporter.write_sep("=", "agent_eval")
            for line in case_lines(_report(state)):  # recorded text (tool names, arguments, reasons) escaped
                terminalreporter.write_line(line)
        if state.skipped:
            from .session import live_skip_hint

            terminalreporter.write_line(live_skip_hint(state.skipped), yellow=True)
        for path in state.reports_written:
            terminalreporter.write_line(f"agent_eval: report written to {path}")
        recorded = state.recorded + (len(state.recorder.written) if state.recorder else 0)
        if recorded:
            terminalreporter.write_line(f"agent_eval: {recorded} run(s) recorded under {state.record_dir}")


def _report(state: _State) -> Report:
    """The session's `reporting.Report`, cases ordered by node id."""
    from ..reporting import CaseRecord, Report

    return Report([CaseRecord.from_dict(r) for r in state.records], state.skipped).sorted()


# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture
def agent_eval(request: pytest.FixtureRequest) -> EvalSession:
    """`await agent_eval.run(agent=..., turns=[...])` → `TranscriptResult`; threshold and runs come
    from `@pytest.mark.agent_eval`, falling back to `[tool.agent_eval]`."""
    from .report import transcript_case
    from .session import EvalSession

    state = _state(request.config)
    node = request.node
    options = node.stash.get(_OPTIONS, None)
    if options is None:
        marker = node.get_closest_marker("agent_eval")
        try:
            options = (
                marker_options(marker.args, marker.kwargs, state.settings)
                if marker is not None
                else MarkerOptions(state.settings.threshold, state.settings.runs)
            )
        except ConfigError as e:
            raise pytest.UsageError(f"{node.nodeid}: {e}") from None
    tags = options.tags

    def record(result: TranscriptResult) -> None:
        case = transcript_case(node.nodeid, result, tags, traces="html" in state.reports, redact=state.redact)
        state.records.append(case.to_dict())
        if state.recorder is not None:
            for run in result.runs:
                if run.capture is not None:
                    state.recorder.save(node.nodeid, run.capture)

    return EvalSession(options.threshold, options.runs, _item=node, config=state.settings, on_result=record)


@pytest.fixture
def llm_eval_agent() -> Any:
    """The agent YAML transcripts run against; override it in your conftest.py."""
    pytest.fail(
        "YAML transcripts need an `llm_eval_agent` fixture returning your agent callable, e.g. in conftest.py:\n"
        "    @pytest.fixture\n"
        "    def llm_eval_agent():\n"
        "        async def agent(history):  # OpenAI-format messages, the last one is the user's\n"
        "            return 'reply'\n"
        "        return agent",
        pytrace=False,
    )


@pytest.fixture
def recorded_trace(request: pytest.FixtureRequest) -> Callable[..., SpanTree]:
    """`recorded_trace(name, run=1)`: a run saved by `pytest --tracegrade-record`, as a `SpanTree`
    (looked up under `record_dir`, default `fixtures/traces/` in the project root)."""
    from .record import recorded_trace as load_recorded

    directory = _state(request.config).record_dir

    def load(name: str, *, run: int = 1) -> SpanTree:
        return load_recorded(name, run=run, directory=directory, root=request.config.rootpath)

    return load


@pytest.fixture(scope="session")
def otlp_receiver() -> Iterator[Any]:
    """A loopback OTLP/HTTP receiver for the whole session (`tracegrade.receiver.OTLPReceiver`): give
    `otlp_receiver.endpoint` to the services under test as `OTEL_EXPORTER_OTLP_ENDPOINT` (see
    `tracegrade.receiver.ServiceProcess`). While it is active, each `agent_eval` turn captures with it:
    an agent callable that calls a service with `tracegrade.trace_headers()` is graded on the
    service's own spans."""
    from ..receiver._service import session_receiver

    yield from session_receiver()


@pytest.fixture
def span_capture() -> Callable[..., capture]:
    """`with span_capture() as cap: ...` records the spans of the block (see `tracegrade.capture`)."""
    return capture
