"""The conformance corpus: real framework telemetry (fixtures/frameworks/, made by gen/make_corpus.sh
against a loopback fake LLM), each run graded with every agentic evaluator against the scenario's truth.

What each run's telemetry holds is read from the raw OTLP files by an oracle that does not use
tracegrade (`Evidence`): a check whose data is recorded must pass on the truth and fail on a wrong
expectation; a check whose data is not recorded must be `not_evaluated` — never passed, never failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tracegrade import EvalResult, TurnContext, grade, load_traces
from tracegrade.dialects import extract
from tracegrade.evaluators import (
    ArgumentCorrectness,
    MaxModelRequests,
    MaxToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
)
from tracegrade.ingest import read_logs, read_spans
from tracegrade.trajectory import Trajectory
from tracegrade.tree import SpanTree

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
ENTRIES = sorted((CORPUS / "entries").glob("*.json"))

# Where a tool's failure is reported by the framework inside the tool's result (Google ADK's retry plugin)
_TOOL_RESULT_KEYS = frozenset({"output.value", "gen_ai.tool.call.result", "gcp.vertex.agent.tool_response"})
# Where OpenLLMetry's LlamaIndex instrumentation records a tool step's output, `"is_error": true` when the tool raised
_STEP_OUTPUT = "traceloop.entity.output"
# Where MLflow records a value's JSON (AutoGen's FunctionExecutionResult, `"is_error": true` when the tool raised,
# in a model request's input messages and in an agent's result)
_MLFLOW_VALUES = frozenset({"mlflow.spanInputs", "mlflow.spanOutputs"})
# Boolean attributes that mark a failed tool span whose status stays unset (Haystack's own tracing; Langfuse's
# Haystack integration records the same flag as metadata, whose values are JSON text)
_ERROR_FLAGS = frozenset({"haystack.tool.error", "langfuse.observation.metadata.haystack.tool.error"})

# Telemetry that does not record how many model requests were made, by run-name prefix (what the
# instrumentation does instead); a request budget must be not_evaluated there.
REQUESTS_NOT_RECORDED = {
    "autogen--native": "AutoGen's own tracing records agent and tool spans, no model calls",
    "google-adk--openinference": "OpenInference's google-adk instrumentor writes every model call onto ADK's agent span",
    "agno--openllmetry": "OpenLLMetry's Agno instrumentation records agent and tool spans, no model calls",
    "anthropic--mlflow--content-on--stream": "mlflow.anthropic.autolog() traces Messages.create, not messages.stream()",
    "anthropic--mlflow--content-off--stream": "mlflow.anthropic.autolog() traces Messages.create, not messages.stream()",
    "smolagents--mlflow": "mlflow.smolagents.autolog() patches Model.__call__; smolagents 1.26 calls Model.generate",
    "crewai--mlflow": "mlflow.crewai.autolog() patches LLM.call; CrewAI's native OpenAI provider does not go through it",
    "autogen--mlflow--content-on--stream": "mlflow.autogen.autolog() patches ChatCompletionClient.create, not "
    "create_stream, which AssistantAgent(model_client_stream=True) calls",
    "autogen--mlflow--content-off--stream": "mlflow.autogen.autolog() patches ChatCompletionClient.create, not "
    "create_stream, which AssistantAgent(model_client_stream=True) calls",
}
CLIENT_TOO = "--with-openai"
# Telemetry whose failed tool attempt records the execution but not the tool, by run-name prefix: a check that
# counts failed attempts (MaxToolCalls by default) must be not_evaluated there; checks of the successful calls grade.
FAILED_ATTEMPT_UNNAMED = {
    "langgraph-js--openllmetry--content-on": "OpenLLMetry-JS names a tool only in the ToolMessage of its tool span's "
    "output, and the attempt that raised has none",
}  # variant that instruments the model client as well: its requests are recorded


# Attributes that hold a framework object's Python `repr()`, not a telemetry convention: the oracle does not
# read them, and neither does tracegrade (a repr's format is the framework's private business). OpenLLMetry's
# CrewAI instrumentation writes `str(result.tasks_output)` — the whole conversation, tool calls with their
# arguments and ids included — whatever TRACELOOP_TRACE_CONTENT says.
PYTHON_REPRS = frozenset({"crewai.crew.tasks_output"})


def _entry(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _strings(value: Any) -> Iterator[str]:
    """Every string of an OTLP JSON document, and `key=value` for every key/value pair with a scalar value
    (span and log attributes, kvlist members of log bodies); attributes named in `PYTHON_REPRS` are skipped."""
    if isinstance(value, dict):
        if value.get("key") in PYTHON_REPRS:
            return
        if "stringValue" in value:
            yield value["stringValue"]
        if isinstance(value.get("key"), str) and isinstance(inner := value.get("value"), dict):
            scalar = inner.get("stringValue", inner.get("intValue"))
            if scalar is not None:
                yield f"{value['key']}={scalar}"
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@dataclass(frozen=True)
class Evidence:
    """What the raw telemetry of a run records, decided without tracegrade."""

    names: bool  # each call's tool name, in a tool span or next to its call id
    arguments: bool  # the arguments of every call, as key/value pairs
    failures: bool  # the failed attempt marked as such (error status or a structured error)


def _argument_forms(args: dict[str, Any]) -> list[list[str]]:
    forms = []
    for key, value in args.items():
        v = json.dumps(value)
        forms.append([f'"{key}": {v}', f'"{key}":{v}', f"'{key}': {value!r}", f"{key}={value}"])
    return forms


def _streamed_arguments(doc: dict[str, Any]) -> Iterator[str]:
    """The arguments of each tool call a streamed chat completion sent in fragments, joined: MLflow records the chunks
    as span events (`mlflow.chunk.value`, OpenAI's `delta.tool_calls[].function.arguments`, one call per `index`)."""
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                joined: dict[int, str] = {}
                for event in span.get("events", []):
                    for a in event.get("attributes", []):
                        if a["key"] != "mlflow.chunk.value":
                            continue
                        for choice in json.loads(a["value"]["stringValue"]).get("choices") or []:
                            for delta in (choice.get("delta") or {}).get("tool_calls") or []:
                                fragment = (delta.get("function") or {}).get("arguments") or ""
                                joined[delta["index"]] = joined.get(delta["index"], "") + fragment
                yield from joined.values()


def _execution_failed(text: str) -> bool:
    """Whether a JSON value holds an AutoGen FunctionExecutionResult (`call_id`, `name`, `content`, `is_error`) of a
    tool that raised."""

    def failed(value: Any) -> bool:
        if isinstance(value, dict):
            if value.keys() == {"call_id", "name", "content", "is_error"} and value["is_error"] is True:
                return True
            return any(failed(v) for v in value.values())
        return isinstance(value, list) and any(failed(v) for v in value)

    if '"is_error"' not in text:
        return False
    try:
        return failed(json.loads(text))
    except ValueError:
        return False


@cache
def evidence(run: str) -> Evidence:
    entry = _entry(CORPUS / "entries" / f"{run}.json")
    docs = [json.loads((CORPUS / entry["traces"]).read_text())]
    if entry.get("logs"):
        docs.append(json.loads((CORPUS / entry["logs"]).read_text()))
    text = [*_strings(docs), *_streamed_arguments(docs[0])]
    blob = "\n".join(text)
    pairs = "\n".join(t for t in text if "=" in t) + "\n"
    spans = [s for rs in docs[0].get("resourceSpans", []) for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])]
    calls = entry["truth"]["tool_calls"]
    span_names = " ".join(s["name"] for s in spans)
    # a name recorded as an attribute value: as is, or as JSON text (MLflow writes every value as JSON)
    names = all(
        c["name"] in span_names
        or any(f"={value}\n" in pairs for value in (c["name"], json.dumps(c["name"])))
        or (c["call_id"] and c["call_id"] in blob)
        for c in calls
    )
    # JSON text inside a JSON value (a tool call's "arguments" string in a recorded message) is escaped once more
    nested = blob.replace('\\"', '"')
    arguments = all(any(f in blob or f in nested for f in forms) for c in calls for forms in _argument_forms(c["args"]))
    # an error on an agent's construction (OpenLIT's AG2 `create_agent` wrapper raising) records no tool's failure
    failures = any(
        s.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR") and not s["name"].startswith("create_agent ")
        for s in spans
    ) or any(
        (a["key"] in _TOOL_RESULT_KEYS and "error_type" in json.dumps(a["value"]))
        or (a["key"] == _STEP_OUTPUT and '"is_error": true' in a["value"].get("stringValue", ""))
        or (a["key"] in _ERROR_FLAGS and (a["value"].get("boolValue") is True or a["value"].get("stringValue") == "true"))
        or (a["key"] in _MLFLOW_VALUES and _execution_failed(a["value"].get("stringValue", "")))
        for s in spans
        for a in s.get("attributes", [])
    )
    return Evidence(names=names, arguments=arguments, failures=failures)


def tree_of(run: str) -> SpanTree:
    """Every trace of the run's file as one tree, with its log records attached."""
    entry = _entry(CORPUS / "entries" / f"{run}.json")
    tree = SpanTree.from_spans(read_spans(CORPUS / entry["traces"]))
    if entry.get("logs"):
        tree.attach_logs(read_logs(CORPUS / entry["logs"]))
    return tree


def trajectory(run: str) -> Trajectory:
    """The run's trajectory."""
    return extract(tree_of(run))


# Runs whose tool calls are recorded only in OTel log records that name no span (OpenLLMetry's Anthropic and
# LiteLLM events carry no trace or span id), so nothing attributes them to a model request: every content check
# is not_evaluated, with a reason that says so and what would record the content on the spans. (LiteLLM's
# content-on events run is not one: its spans keep the output messages.)
CONTENT_IN_LOGS = {"anthropic--openllmetry--content-on--events", "anthropic--openllmetry--content-off--events",
                   "litellm--openllmetry--content-off--events"}  # fmt: skip
UNATTRIBUTED = ("log record(s) name no span (no trace or span id)", "cannot be attributed to any model request",
                "emit the log records inside the span's context")  # fmt: skip
# The instrumentor's argument that keeps content on the spans (OpenLLMetry 0.62.4), by framework
SPANS_SWITCH = {"anthropic": "use_attributes=True", "litellm": "use_legacy_attributes=True"}


def _assert_unattributed(results: list[EvalResult], run: str) -> None:
    """Every result not_evaluated, each reason naming the unattributable log records and the fixes."""
    assert _outcomes(results) == ["not_evaluated"] * len(results), [r.reasoning for r in results]
    parts = (*UNATTRIBUTED, SPANS_SWITCH[run.split("--")[0]])
    for r in results:
        assert all(part in r.reasoning for part in parts), r.reasoning


RUNS = [p.stem for p in ENTRIES]


def _expected_sequence(entry: dict[str, Any], ev: Evidence) -> list[str]:
    calls = entry["truth"]["tool_calls"]
    return [c["name"] for c in calls if not (c["failed"] and ev.failures)]


def _outcomes(results: list[EvalResult]) -> list[str]:
    return [r.outcome for r in results]


@pytest.mark.parametrize("run", RUNS)
def test_tool_checks_grade_right(run: str) -> None:
    entry, ev, traj = _entry(CORPUS / "entries" / f"{run}.json"), evidence(run), trajectory(run)
    calls = entry["truth"]["tool_calls"]
    sequence = _expected_sequence(entry, ev)
    right = [
        ToolCorrectness(expected_tools=sequence),
        TrajectoryMatch(expected_trajectory=sequence, order="exact", parallel="unordered"),
        MaxToolCalls(max_calls=len(calls)),
    ]
    wrong = [
        ToolCorrectness(expected_tools=[*sequence, "cancel_order"]),
        TrajectoryMatch(expected_trajectory=["search_kb", "get_order"], order="exact"),
        MaxToolCalls(max_calls=len(calls) - 2),
    ]
    got = grade(traj, right + wrong)
    if run in CONTENT_IN_LOGS:
        return _assert_unattributed(got, run)
    want_right, want_wrong = ("passed", "failed") if ev.names else ("not_evaluated", "not_evaluated")
    want = [want_right] * 3 + [want_wrong] * 3
    if any(run.startswith(prefix) for prefix in FAILED_ATTEMPT_UNNAMED):
        want[2] = want[5] = "not_evaluated"  # the budgets count the attempt whose tool is not recorded
    assert _outcomes(got) == want, [r.reasoning for r in got]


@pytest.mark.parametrize("run", RUNS)
def test_calls_are_credited_to_the_agent_that_made_them(run: str) -> None:
    """A call inside an agent run is credited to the agent by the name the framework gave it (the truth's
    agent), never to a span's method name or an instrumentor's label; a check scoped to that agent grades as
    the unscoped one does, or is not_evaluated when the telemetry puts no call inside a run of that agent."""
    entry, ev, traj = _entry(CORPUS / "entries" / f"{run}.json"), evidence(run), trajectory(run)
    agent = entry["truth"]["agent"]
    if agent is None or run in CONTENT_IN_LOGS:  # no agent in the scenario's setup / no call attributable
        return
    credited = {c.agent for c in traj.all_calls} - {None}
    assert credited <= {agent}, credited
    sequence = _expected_sequence(entry, ev)
    scoped, whole = grade(traj, [ToolCorrectness(expected_tools=sequence, agent=agent),
                                 ToolCorrectness(expected_tools=sequence)])  # fmt: skip
    assert scoped.outcome == (whole.outcome if credited else "not_evaluated"), scoped.reasoning


@pytest.mark.parametrize("run", RUNS)
def test_argument_checks_grade_right(run: str) -> None:
    entry, ev, traj = _entry(CORPUS / "entries" / f"{run}.json"), evidence(run), trajectory(run)
    # the tools by the names the run gave them (Semantic Kernel's are `<plugin>-<function>`)
    names = {c["name"] for c in entry["truth"]["tool_calls"]}
    order, weather = (next(n for n in names if n == tool or n.endswith(f"-{tool}")) for tool in ("get_order", "get_weather"))
    got = grade(traj, [ArgumentCorrectness(order, {"order_id": 1234}), ArgumentCorrectness(order, {"order_id": 9999}),
                       ArgumentCorrectness(weather, {"city": "Paris"})])  # fmt: skip
    if run in CONTENT_IN_LOGS:
        return _assert_unattributed(got, run)
    want = ["passed", "failed", "passed"] if ev.arguments and ev.names else ["not_evaluated"] * 3
    assert _outcomes(got) == want, [r.reasoning for r in got]


@pytest.mark.parametrize("run", RUNS)
def test_model_request_budget_grades_right(run: str) -> None:
    entry, traj = _entry(CORPUS / "entries" / f"{run}.json"), trajectory(run)
    n = entry["truth"]["model_requests"]
    got = grade(traj, [MaxModelRequests(max_requests=n), MaxModelRequests(max_requests=n - 1)])
    unrecorded = any(run.startswith(prefix) for prefix in REQUESTS_NOT_RECORDED) and not run.endswith(CLIENT_TOO)
    want = ["not_evaluated", "not_evaluated"] if unrecorded else ["passed", "failed"]
    assert _outcomes(got) == want, [r.reasoning for r in got]


def _records_naming_no_span(logs_file: Path) -> int:
    doc = json.loads(logs_file.read_text())
    records = [r for rl in doc["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    return sum(1 for r in records if not r.get("traceId") or not r.get("spanId"))


@pytest.mark.parametrize(
    "run",
    [
        "anthropic--openllmetry--content-on--events",
        "langgraph--openllmetry--content-on--events",
        "agent-framework--openinference--content-on",  # spans in both conventions (OpenInference's processor)
    ],
)
def test_load_traces_counts_the_log_records_it_could_not_attach(run: str) -> None:
    entry = _entry(CORPUS / "entries" / f"{run}.json")
    expected = _records_naming_no_span(CORPUS / entry["logs"])
    trees = load_traces([CORPUS / entry["traces"], CORPUS / entry["logs"]])
    assert [t.unattached_logs for t in trees] == [expected] * len(trees)
    got = [r for t in trees for r in grade(extract(t), [ToolCorrectness(expected_tools=["get_order"])])]
    if expected:  # the Anthropic events: every record names no span (one tree per trace: OpenLLMetry's, the SDK's)
        assert _outcomes(got) == ["not_evaluated"] * len(trees)
        for r in got:
            assert f"{expected} OTel {UNATTRIBUTED[0]}" in r.reasoning and UNATTRIBUTED[2] in r.reasoning, r.reasoning
    else:  # LangChain's and Agent Framework's events name their spans: all attached, nothing said about them
        assert sum(len(n.logs) for t in trees for n in t) == len(read_logs(CORPUS / entry["logs"]))
        assert not any(UNATTRIBUTED[0] in r.reasoning for r in got)


# --- README: the supported frameworks, generated from the manifest ------------------------------------

README = CORPUS.parent.parent / "README.md"
_START, _END = "<!-- frameworks:start -->", "<!-- frameworks:end -->"
_FRAMEWORK_PACKAGE = {
    "agent-framework": "agent-framework-core", "anthropic": "anthropic", "autogen": "autogen-agentchat",
    "crewai": "crewai", "google-adk": "google-adk", "haystack": "haystack-ai", "langgraph": "langgraph", "llamaindex": "llama-index-core",
    "openai": "openai", "openai-agents": "openai-agents", "pydantic-ai": "pydantic-ai-slim",
    "semantic-kernel": "semantic-kernel",
    "smolagents": "smolagents", "strands": "strands-agents", "vercel-ai": "ai",
    "langgraph-js": "@langchain/langgraph",
}  # fmt: skip
_LABEL = {"native": "its own OpenTelemetry tracing", "otel-genai": "OpenTelemetry GenAI (contrib)",
          "openinference": "OpenInference", "openllmetry": "OpenLLMetry (Traceloop)", "logfire": "Logfire",
          "langfuse": "Langfuse Python SDK (OpenAI drop-in + @observe, LangChain CallbackHandler, or Haystack LangfuseConnector)",
          "openlit": "OpenLIT",
          "mcp-native": "its own, with MCP tools: the MCP SDK's and FastMCP's own spans",
          "mcp-openllmetry": "its own, with MCP tools: OpenLLMetry (Traceloop) MCP",
          "mcp-logfire": "its own, with MCP tools: Logfire MCP",
          "mcp-openlit": "OpenLIT, with MCP tools: OpenLIT MCP",
          "langsmith": "LangSmith SDK's OpenTelemetry export (LangChain's tracer, @traceable + wrap_openai, or "
                       "OpenAIAgentsTracingProcessor)",
          "mlflow": "MLflow Tracing's OTLP export (autolog integrations, @mlflow.trace)"}  # fmt: skip


def _instrumentor_package(entry: dict[str, Any]) -> str | None:
    packages, kind = entry["packages"], entry["instrumentor"].removeprefix("mcp-")
    if kind == "openllmetry" and (js := [p for p in packages if p.startswith("@traceloop/instrumentation-")]):
        return f"{js[0]} {packages[js[0]]}"  # OpenLLMetry-JS
    prefix = {"openinference": "openinference-instrumentation-", "openllmetry": "opentelemetry-instrumentation-",
              "otel-genai": "opentelemetry-instrumentation-", "logfire": "logfire",
              "langfuse": "langfuse",
              "langsmith": "langsmith", "openlit": "openlit", "mlflow": "mlflow-tracing"}.get(kind)  # fmt: skip
    if prefix is None:
        return None
    framework = entry["framework"].split("-")[0]
    found = sorted(p for p in packages if p.startswith(prefix) and p != "opentelemetry-instrumentation-threading")
    best = ([p for p in found if p.endswith("-" + entry["framework"])]  # openai-agents: not plain -openai
            or [p for p in found if framework[:5] in p.replace("llama-index", "llamaindex")] or found)
    return f"{best[0]} {packages[best[0]]}" if best else None


def frameworks_table() -> str:
    """The README's table of supported frameworks: one row per framework × instrumentation in the manifest."""
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for entry in manifest["runs"]:
        rows.setdefault((entry["framework"], entry["instrumentor"]), []).append(entry)
    lines = ["| framework | instrumentation | versions recorded | runs |", "|---|---|---|---:|"]
    for (framework, kind), entries in sorted(rows.items()):
        first = entries[0]
        package = _FRAMEWORK_PACKAGE.get(framework, framework)
        versions = [f"{package} {first['packages'].get(package, '?')}"]
        if (instrumentor := _instrumentor_package(first)) is not None:
            versions.append(instrumentor)
        if kind.startswith("mcp-"):
            versions.append(f"mcp {first['packages'].get('mcp', '?')}")
        lines.append(f"| {framework} | {_LABEL.get(kind, kind)} | {', '.join(versions)} | {len(entries)} |")
    return "\n".join(lines)


def test_readme_lists_the_frameworks_of_the_manifest() -> None:
    text = README.read_text()
    section = text[text.index(_START) + len(_START) : text.index(_END)].strip()
    assert section == frameworks_table(), "README is out of date: run `python tests/test_frameworks.py`"


if __name__ == "__main__":  # rewrite README's table from the manifest
    text = README.read_text()
    README.write_text(text[: text.index(_START) + len(_START)] + "\n" + frameworks_table() + "\n" + text[text.index(_END) :])


# --- the turn's user message: read where a model request's input records it, never from a content-off run -------

QUESTION = "What is the status of order 1234, the weather in Paris, and the refund policy?"  # every scenario's


@pytest.mark.parametrize("run", RUNS)
def test_the_user_message_is_the_scenarios_question_where_recorded_and_never_read_with_content_off(run: str) -> None:
    entry, traj = _entry(CORPUS / "entries" / f"{run}.json"), trajectory(run)
    ctx = TurnContext.for_trajectory(traj)
    if traj.user_message is None:
        assert ctx.user == "" and ctx.user_missing is not None
        assert ctx.user_missing.startswith("the user message is not in the telemetry: "), ctx.user_missing
    else:  # a framework may wrap the question in its own prompt (CrewAI's task, DSPy's signature fields)
        assert entry["content"] and QUESTION in traj.user_message, traj.user_message
        assert (ctx.user, ctx.user_missing) == (traj.user_message, None)


@pytest.mark.parametrize(
    "run",
    [
        "pydantic-ai--native--content-on",  # OTel GenAI `gen_ai.input.messages` on the chat span
        "agno--openinference--content-on",  # OpenInference `llm.input_messages.N.message.{role,content}`
        "openai--openllmetry--content-on--events",  # `gen_ai.user.message` log events of the chat span
        "google-adk--openlit--content-on",  # a sub-agent's request inside the top-level run
    ],
)
def test_the_user_message_is_read_from_each_recorded_shape(run: str) -> None:
    assert trajectory(run).user_message == QUESTION


def test_a_content_placeholder_is_not_read_as_the_user_message() -> None:
    # Google ADK writes `<elided>` as the content of its message events when content capture is off
    assert trajectory("google-adk--native--content-off--schema-v1").user_message is None
