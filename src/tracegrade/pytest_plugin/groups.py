"""`[tool.agent_eval.groups]`: quality gates over a session's test outcomes (pytest-agent-eval's semantics).

```toml
[tool.agent_eval.groups.booking]
threshold = 0.9                    # fraction of the group's non-skipped members that must pass (default 1.0)
tags = ["gate:booking"]            # members: tests whose agent_eval marker (or YAML transcript) has one of these tags
pytest_markers = ["booking"]       # ... or that carry one of these pytest markers (registered automatically)
must_pass = ["booking_confirmed"]  # test identities that must pass wherever they run
```

A test's identity is its name (a YAML transcript's `id`; a function's name with its parameters);
a `must_pass` entry `test_x` also names every `test_x[...]`. `must_pass` is an assertion over every
test that ran, not a selector: a failure outside the group's members still fails the group, an entry
that did not run is a warning. When pytest would exit with "tests failed" and every failed test is a
member of a group that met its threshold (and no `must_pass` entry failed, nothing failed to
collect), the exit code is 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from .._hints import did_you_mean
from ..errors import ConfigError

__all__ = [
    "EvalOutcome",
    "GroupConfig",
    "GroupGate",
    "GroupResult",
    "build_group_markdown_lines",
    "evaluate_groups",
    "format_group_summary_lines",
    "install_groups",
    "parse_groups",
]

Outcome = Literal["passed", "failed", "skipped"]

_KNOWN_KEYS = ("threshold", "tags", "pytest_markers", "must_pass")
_LIST_KEYS = ("tags", "pytest_markers", "must_pass")
_META_KEY = "tracegrade_agent_eval_group_meta"


@dataclass(frozen=True)
class GroupConfig:
    """One `[tool.agent_eval.groups.<name>]` table."""

    name: str
    threshold: float = 1.0
    """Fraction of the matched, non-skipped tests that must pass."""
    tags: list[str] = field(default_factory=list)
    """Transcript / marker tags selecting members (either selector suffices)."""
    pytest_markers: list[str] = field(default_factory=list)
    """Pytest marker names selecting members."""
    must_pass: list[str] = field(default_factory=list)
    """Test identities that must pass whenever they run."""


@dataclass
class EvalOutcome:
    """One test's outcome as the groups see it: `failed` if any phase failed, `skipped` if setup skipped."""

    identity: str
    nodeid: str
    outcome: Outcome
    tags: list[str] = field(default_factory=list)
    markers: list[str] = field(default_factory=list)


@dataclass
class GroupResult:
    """A group's verdict over the session's outcomes."""

    group: GroupConfig
    total: int = 0
    """Members that ran (passed or failed)."""
    passed_count: int = 0
    skipped_count: int = 0
    failing: list[str] = field(default_factory=list)
    """Identities of the members that failed."""
    failed_nodeids: list[str] = field(default_factory=list)
    must_pass_failed: list[str] = field(default_factory=list)
    must_pass_missing: list[str] = field(default_factory=list)
    """`must_pass` entries no test that ran matched."""

    @property
    def matched(self) -> bool:
        """Whether any test (skipped ones too) is a member."""
        return self.total > 0 or self.skipped_count > 0

    @property
    def skipped(self) -> bool:
        """Members exist and every one was skipped."""
        return self.total == 0 and self.skipped_count > 0

    @property
    def pass_rate(self) -> float:
        return self.passed_count / self.total if self.total else 0.0

    @property
    def passed(self) -> bool:
        """Members ran, the pass rate reaches the threshold and no `must_pass` entry failed."""
        return self.total > 0 and self.pass_rate >= self.group.threshold - 1e-9 and not self.must_pass_failed


def parse_groups(raw: Any, where: str = "") -> list[GroupConfig]:
    """The groups of a `[tool.agent_eval.groups]` table; `ConfigError` naming the group and key on bad
    input (an unknown key is an error, with the closest valid one: a typo must not disable a gate).
    `where` (e.g. the pyproject path) is added to the messages."""
    suffix = f" in {where}" if where else ""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"[tool.agent_eval.groups]{suffix} must be a table of group tables, got {type(raw).__name__}")
    groups: list[GroupConfig] = []
    for name, table in raw.items():
        prefix = f"[tool.agent_eval.groups.{name}]{suffix}"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{prefix} must be a table, got {type(table).__name__} ({table!r})")
        for key in table:
            if key not in _KNOWN_KEYS:
                hint = did_you_mean(str(key), _KNOWN_KEYS)
                raise ConfigError(f"{prefix}: unknown key {key!r}{hint}; valid keys: {', '.join(_KNOWN_KEYS)}")
        threshold = table.get("threshold", 1.0)
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"{prefix}: threshold must be a number between 0 and 1, got {threshold!r}")
        lists: dict[str, list[str]] = {}
        for key in _LIST_KEYS:
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ConfigError(f"{prefix}: {key} must be a list of strings, got {value!r}")
            lists[key] = list(value)
        groups.append(GroupConfig(str(name), float(threshold), **lists))
    return groups


def _is_member(group: GroupConfig, outcome: EvalOutcome) -> bool:
    return not set(group.tags).isdisjoint(outcome.tags) or not set(group.pytest_markers).isdisjoint(outcome.markers)


def _names(entry: str, identity: str) -> bool:
    return identity == entry or identity.startswith(entry + "[")


def evaluate_groups(groups: Sequence[GroupConfig], outcomes: Sequence[EvalOutcome]) -> list[GroupResult]:
    """One result per group, in order."""
    results: list[GroupResult] = []
    for group in groups:
        result = GroupResult(group)
        for outcome in outcomes:
            if not _is_member(group, outcome):
                continue
            if outcome.outcome == "skipped":
                result.skipped_count += 1
                continue
            result.total += 1
            if outcome.outcome == "passed":
                result.passed_count += 1
            else:
                result.failing.append(outcome.identity)
                result.failed_nodeids.append(outcome.nodeid)
        for entry in group.must_pass:
            ran = [o for o in outcomes if o.outcome != "skipped" and _names(entry, o.identity)]
            if not ran:
                result.must_pass_missing.append(entry)
            elif any(o.outcome == "failed" for o in ran):
                result.must_pass_failed.append(entry)
        results.append(result)
    return results


def format_group_summary_lines(results: Sequence[GroupResult]) -> list[str]:
    """The terminal summary: a line per group, its failures and each `must_pass` entry's state
    (lines with `WARNING:` flag a group that matched nothing or an entry that did not run)."""
    lines: list[str] = []
    for result in results:
        group = result.group
        if not result.matched:
            lines.append(f"WARNING: group '{group.name}' matched no tests")
        elif result.skipped:
            lines.append(f"{group.name}: SKIPPED ({result.skipped_count} matched, all skipped)")
        else:
            status = "PASSED" if result.passed else "FAILED"
            lines.append(
                f"{group.name}: {result.passed_count}/{result.total} passed "
                f"({result.pass_rate:.0%}) >= {group.threshold:.0%} required -- {status}"
            )
            if result.failing:
                lines.append(f"  failures: {', '.join(result.failing)}")
        for entry in group.must_pass:  # shown even when the selectors matched nothing
            if entry in result.must_pass_failed:
                lines.append(f"  must_pass: {entry} FAILED")
            elif entry in result.must_pass_missing:
                lines.append(f"  WARNING: must_pass entry '{entry}' did not run")
            else:
                lines.append(f"  must_pass: {entry} ok")
    return lines


def build_group_markdown_lines(results: Sequence[GroupResult]) -> list[str]:
    """A `## Groups` markdown section: a table row per group, then notes on failures and `must_pass`."""
    lines = ["## Groups", "", "| Group | Passed | Total | Rate | Threshold | Status |", "|---|---|---|---|---|---|"]
    notes: list[str] = []
    for result in results:
        group = result.group
        if not result.matched:
            status = "❌ must_pass FAILED" if result.must_pass_failed else "⚠️ NO MATCH"
            lines.append(f"| {group.name} | - | 0 | - | {group.threshold:.2f} | {status} |")
        elif result.skipped:
            lines.append(f"| {group.name} | - | 0 | - | {group.threshold:.2f} | ⏭ SKIPPED |")
        else:
            status = "✅ PASS" if result.passed else "❌ FAIL"
            lines.append(
                f"| {group.name} | {result.passed_count} | {result.total} "
                f"| {result.pass_rate:.2f} | {group.threshold:.2f} | {status} |"
            )
            if result.failing:
                notes.append(f"- `{group.name}` failures: {', '.join(result.failing)}")
        notes.extend(f"- `{group.name}` must_pass FAILED: {entry}" for entry in result.must_pass_failed)
        notes.extend(f"- `{group.name}` must_pass did not run: {entry}" for entry in result.must_pass_missing)
    if notes:
        lines += ["", *notes]
    return lines


def _item_meta(item: pytest.Item) -> dict[str, Any]:
    marker = item.get_closest_marker("agent_eval")
    tags = (marker.kwargs.get("tags") if marker is not None else None) or []
    return {
        "identity": item.name,
        "tags": [t for t in tags if isinstance(t, str)],
        "markers": sorted({m.name for m in item.iter_markers()}),
    }


class GroupGate:
    """The session plugin: records each test's outcome (from xdist workers too), prints the group
    summary and lowers "tests failed" to 0 when the groups absorb every failure."""

    def __init__(self, config: pytest.Config, groups: Sequence[GroupConfig]) -> None:
        self.config = config
        self.groups = list(groups)
        self.outcomes: dict[str, EvalOutcome] = {}
        self.failed_nodeids: set[str] = set()
        self.collect_error = False
        self.deselected = 0
        self.exit_overridden = False
        self._worker = hasattr(config, "workerinput")

    def _record(self, nodeid: str, meta: Mapping[str, Any], when: str, outcome: str) -> None:
        entry = self.outcomes.get(nodeid)
        if entry is None:
            entry = EvalOutcome(meta["identity"], nodeid, "passed", list(meta["tags"]), list(meta["markers"]))
            self.outcomes[nodeid] = entry
        if when == "call" or (when == "setup" and outcome != "passed"):
            entry.outcome = outcome  # type: ignore[assignment]  # pytest's outcomes are these three
        elif when == "teardown" and outcome == "failed" and entry.outcome == "passed":
            entry.outcome = "failed"
        if outcome == "failed":
            self.failed_nodeids.add(nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        meta = _item_meta(item)
        if self._worker:  # the controller records it from the report (once per test is enough)
            if not any(key == _META_KEY for key, _ in report.user_properties):
                report.user_properties.append((_META_KEY, meta))
        else:
            self._record(item.nodeid, meta, report.when, report.outcome)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """xdist controller: the workers' reports carry the test's identity, tags and markers."""
        if self._worker:
            return
        meta = next((v for k, v in report.user_properties if k == _META_KEY), None)
        if isinstance(meta, Mapping):  # only worker reports carry it: in-process tests were recorded above
            self._record(report.nodeid, meta, report.when, report.outcome)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_error = True

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.deselected += len(items)

    def results(self) -> list[GroupResult]:
        return evaluate_groups(self.groups, list(self.outcomes.values()))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self._worker or exitstatus != pytest.ExitCode.TESTS_FAILED or self.collect_error:
            return
        results = self.results()
        if any(r.must_pass_failed for r in results):
            return
        gated = [r for r in results if r.total > 0]
        if not gated or not all(r.passed for r in gated):
            return
        covered = {nodeid for r in gated for nodeid in r.failed_nodeids}
        if self.failed_nodeids <= covered:
            session.exitstatus = pytest.ExitCode.OK
            self.exit_overridden = True

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._worker or not self.outcomes:
            return
        terminalreporter.section("group summary")
        for line in format_group_summary_lines(self.results()):
            terminalreporter.write_line(line, yellow="WARNING" in line)
        if self.deselected:
            terminalreporter.write_line(
                f"note: {self.deselected} test(s) deselected — group pass rates reflect the selected subset"
            )
        if self.exit_overridden:
            terminalreporter.write_line("exit code overridden to 0: all group thresholds met", green=True)


def install_groups(config: pytest.Config, groups: Sequence[GroupConfig]) -> GroupGate | None:
    """Register the groups' pytest markers and the gate plugin (nothing when there are no groups)."""
    if not groups:
        return None
    for group in groups:
        for marker in group.pytest_markers:
            config.addinivalue_line(
                "markers", f"{marker}: selects tests for the [tool.agent_eval.groups.{group.name}] quality gate"
            )
    gate = GroupGate(config, groups)
    config.pluginmanager.register(gate, "tracegrade-agent-eval-groups")
    return gate
