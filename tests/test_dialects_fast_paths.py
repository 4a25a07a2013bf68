"""The shortcuts `dialects.extract` takes answer what the general reads answer: dialect attributes read
from a module's namespace, an agent run given its parent without a copy, the wrapping dialects looked up
by name, SDK span internals (events, dropped attributes) read in place of their properties, and JSON
message text that cannot hold a tool call skipped without decoding."""

from __future__ import annotations

import dataclasses
import json
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracegrade.dialects import DIALECTS, _attribute, _dropped_attributes, _with_parent, extract
from tracegrade.dialects._messages import otel_requests, otel_results, requested, requested_reader
from tracegrade.spans import Span
from tracegrade.trajectory import AgentRun
from tracegrade.tree import SpanTree


def test_a_dialect_attribute_reads_as_getattr_reads_it() -> None:
    plain = types.ModuleType("plain")
    plain.FLAG = True  # type: ignore[attr-defined]
    lazy = types.ModuleType("lazy")
    lazy.__getattr__ = lambda name: f"computed {name}"  # type: ignore[attr-defined]  # PEP 562

    class Holder:
        FLAG = "class value"

    for obj in (plain, lazy, Holder(), *DIALECTS, None):
        for key in ("FLAG", "MESSAGE_SHAPES", "RUN_MESSAGES", "ARGS_MAY_BE_WRAPPED", "missing"):
            assert _attribute(obj, key, "default") == getattr(obj, key, "default"), (obj, key)
    assert _attribute(lazy, "missing", None) == "computed missing"


def _run(parent: AgentRun | None = None, **changes: Any) -> AgentRun:
    values = {f.name: f"{f.name}-value" for f in dataclasses.fields(AgentRun)}
    values.update(input_tokens=3, output_tokens=4, final_output={"a": 1}, span=None, parent=parent, **changes)
    return AgentRun(**values)


def test_an_agent_run_given_its_parent_equals_a_replaced_copy_in_every_field() -> None:
    outer = _run(name="outer")
    for step, parent in ((_run(), outer), (_run(parent=outer), None), (_run(), None), (_run(parent=outer), outer)):
        got, want = _with_parent(step, parent), dataclasses.replace(step, parent=parent)
        assert [getattr(got, f.name) for f in dataclasses.fields(AgentRun)] == [
            getattr(want, f.name) for f in dataclasses.fields(AgentRun)
        ]
        assert got.parent is parent
    same = _run()
    assert _with_parent(same, None) is same  # already that parent: no copy


def test_an_agent_run_subclass_keeps_its_class_when_given_a_parent() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Tagged(AgentRun):
        tag: str = "t"

    got = _with_parent(Tagged("a", tag="x"), _run())
    assert type(got) is Tagged and got.tag == "x" and got.parent is not None


def _sdk_spans(limits: SpanLimits | None = None) -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=limits) if limits else TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("pydantic-ai")
    attrs = {"a": 1, "b": 2, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
             "gen_ai.tool.call.id": "c1"}  # fmt: skip
    decision = {"gen_ai.tool.call.decision.outcome": "deny", "gen_ai.tool.call.id": "c1"}
    with (
        tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}),
        tracer.start_as_current_span("execute_tool search", attributes=attrs) as span,
    ):
        span.add_event("gen_ai.tool.call.decision", decision)
    provider.shutdown()
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize("limits", [None, SpanLimits(max_span_attributes=3)], ids=["unlimited", "three attributes"])
def test_sdk_span_events_and_dropped_attributes_read_as_their_properties(limits: SpanLimits | None) -> None:
    spans = _sdk_spans(limits)
    for span in spans:
        assert _dropped_attributes(span) == span.dropped_attributes
    [call] = extract(SpanTree.from_readable_spans(spans)).all_calls
    assert call.decision == "deny"  # the event on the SDK span was seen
    assert call.dropped_attributes == (2 if limits else 0)
    with_dict = spans[0]
    with_dict._attributes = dict(with_dict.attributes)  # as `capture` slims a span that dropped nothing
    assert _dropped_attributes(with_dict) == with_dict.dropped_attributes == 0


def test_span_records_have_no_sdk_internals_to_read() -> None:
    span = Span(1, 2, None, "execute_tool t", 0, 1, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"})
    [call] = extract(SpanTree.from_spans([span])).all_calls
    assert call.dropped_attributes == 0 and call.decision is None


_TEXT = st.sampled_from(["tool_call", "tool_call_response", "text", "tool", "é", '"', "\\", "\n", "x"])
_PART = st.fixed_dictionaries(
    {"type": _TEXT},
    optional={"id": _TEXT, "name": _TEXT, "arguments": st.one_of(_TEXT, st.dictionaries(_TEXT, _TEXT, max_size=2)),
              "result": _TEXT, "response": _TEXT},
)  # fmt: skip
_MESSAGES = st.lists(st.fixed_dictionaries({"role": _TEXT, "parts": st.lists(_PART, max_size=3)}), max_size=3)


@settings(max_examples=300, deadline=None)
@given(messages=_MESSAGES, ascii_only=st.booleans())
def test_message_text_is_read_as_its_decoded_value_is(messages: list[Any], ascii_only: bool) -> None:
    text = json.dumps(messages, ensure_ascii=ascii_only)
    assert otel_requests(text) == otel_requests(messages)
    assert otel_results(text) == otel_results(messages)
    attrs = {"gen_ai.output.messages": text}
    assert requested_reader(("otel",))(attrs) == requested(attrs, ("otel",))


def test_a_tool_call_written_with_unicode_escapes_is_still_found() -> None:
    escaped = '[{"role":"assistant","parts":[{"type":"tool\\u005fcall","id":"c1","name":"s","arguments":"{}"}]}]'
    assert [r.call_id for r in otel_requests(escaped)] == ["c1"]
    response = '[{"role":"user","parts":[{"type":"\\u0074ool_call_response","id":"c1","result":"ok"}]}]'
    assert otel_results(response) == {"c1": "ok"}
    assert otel_requests("not json") == [] and otel_requests('[{"parts":[{"type":"text"}]}]') == []
