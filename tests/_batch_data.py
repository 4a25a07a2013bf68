"""Recorded agent runs for the batch tests: real Pydantic AI agents (FunctionModel) under `capture`,
written by the project's writers as OTLP JSON lines, Parquet (ClickHouse layout) and Delta."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _agents import scripted_agent
from tracegrade import capture
from tracegrade.spans import Span

SPEC: list[Any] = [
    {"ToolCorrectness": {"expected_tools": ["search", "get_order"]}},
    {"MaxToolCalls": 3},
    {"MaxModelRequests": 4},
    {"ArgumentCorrectness": {"tool_name": "get_order", "expected_arguments": {"id": 1234}}},
    {"TrajectoryMatch": {"expected_trajectory": ["search", "get_order"], "order": "in_order"}},
]
"""Five evaluators; a run that searches and gets order 1234 passes all five."""

GOOD = [("search", {"q": "order 1234"}), ("get_order", {"id": 1234})]
WRONG_ID = [("search", {"q": "order 99"}), ("get_order", {"id": 99})]
NO_ORDER = [("search", {"q": "hello"})]


def record_runs(count: int, *, conversation: str | None = None) -> list[Span]:
    """`count` runs (each its own trace) cycling through a passing run, a wrong argument and a
    missing tool, for two agents; as `Span`s in capture order."""
    spans: list[Span] = []
    plans = [("support", GOOD), ("support", WRONG_ID), ("billing", NO_ORDER), ("billing", GOOD)]
    for i in range(count):
        name, steps = plans[i % len(plans)]
        agent = scripted_agent(steps, name=name)
        kwargs = {"conversation_id": conversation} if conversation else {}
        with capture() as cap:
            agent.run_sync(f"request {i}", **kwargs)
        spans.extend(Span.from_readable(s) for s in cap.spans)
    return spans


def trace_ids(spans: list[Span]) -> list[str]:
    return list(dict.fromkeys(f"{s.trace_id:032x}" for s in spans))


def write_files(spans: list[Span], directory: Path, files: int = 2) -> list[Path]:
    """The traces split over `files` collector-style JSON lines files (whole traces per file)."""
    from tracegrade import write_otlp_json

    ids = trace_ids(spans)
    paths = []
    for k in range(files):
        mine = set(ids[k::files])
        part = [s for s in spans if f"{s.trace_id:032x}" in mine]
        paths.append(write_otlp_json(part, directory / f"traces-{k}.jsonl", lines=True, batch_size=7))
    return paths


CARD_ID = 98765
"""The wrong order id of `record_cases`' failing runs (long enough for redaction to scrub it from reasons)."""


def record_cases() -> list[Span]:
    """Six runs under a root span carrying `eval.case`: case `refund` three times (the second run
    gets the wrong order), case `hello` twice (both wrong), and one run without the attribute."""
    from opentelemetry import trace

    wrong = [("search", {"q": "order"}), ("get_order", {"id": CARD_ID})]
    plans = [("refund", GOOD), ("refund", wrong), ("refund", GOOD), ("hello", wrong), ("hello", wrong), (None, GOOD)]
    spans: list[Span] = []
    for case, steps in plans:
        with capture() as cap:
            attributes = {"eval.case": case} if case else {}
            with trace.get_tracer("tests").start_as_current_span("case", attributes=attributes):
                scripted_agent(steps, name="support").run_sync("go")
        spans.extend(Span.from_readable(s) for s in cap.spans)
    return spans
