"""The evaluators' options on trace files: every matching mode, argument mode, scope and health check
gives the stated verdict on the shipped run in each convention and format, and a real Pydantic AI
run graded live and from its written file gives the same results."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from _agents import run_captured
from tracegrade import grade, load_traces, write_otlp_json
from tracegrade.evaluators import ArgumentCorrectness, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from tracegrade.evaluators.health import MaxDuration, MaxTokens, NoErrorSpans, NoToolLoops

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FILES = [
    "dialects/pydantic_ai.json",
    "dialects/genai.json",
    "dialects/openinference.json",
    "dialects/openllmetry.json",
    "otlp/agent_run.jsonl.gz",
    "otlp/agent_run.pb",
    "jaeger/agent_run.json",
]
SEARCH_OK = {"tool": "search", "args": {"q": "order #1234"}}

# The shipped run: search(q='order 1234') fails, search(q='order #1234'), get_order(id=1234); agent
# 'support'; 4 model requests, 660 input + 50 output tokens; tools take 200 µs, the run 8 ms.
CASES: list[tuple[str, Any, str]] = [
    ("exact", TrajectoryMatch(["search", "get_order"], order="exact"), "passed"),
    ("in_order wrong order", TrajectoryMatch(["get_order", "search"], order="in_order"), "failed"),
    ("any_order", TrajectoryMatch(["get_order", "search"], order="any_order"), "passed"),
    ("strict", TrajectoryMatch(["search", "get_order"], order="strict"), "passed"),
    ("strict wrong order", TrajectoryMatch(["get_order", "search"], order="strict"), "failed"),
    ("unordered", TrajectoryMatch(["get_order", "search"], order="unordered"), "passed"),
    ("subset", TrajectoryMatch(["search", "refund", "get_order"], order="subset"), "passed"),
    ("subset missing", TrajectoryMatch(["search"], order="subset"), "failed"),
    ("superset", TrajectoryMatch(["get_order"], order="superset"), "passed"),
    ("superset extra", TrajectoryMatch(["get_order", "refund"], order="superset"), "failed"),
    ("failed attempts", TrajectoryMatch(["search", "search", "get_order"], order="exact", include_failed=True), "passed"),
    ("steps args optional", TrajectoryMatch([SEARCH_OK, {"tool": "log", "optional": True}, "get_order"], order="exact"), "passed"),
    ("steps wrong args", TrajectoryMatch([{"tool": "search", "args": {"q": "x"}}, "get_order"], order="exact"), "failed"),
    ("steps args exact", TrajectoryMatch([SEARCH_OK, {"tool": "get_order", "args": {"id": 1234}}], args_mode="exact"), "passed"),
    ("args subset", ArgumentCorrectness("search", {"q": "order #1234"}), "passed"),
    ("args exact", ArgumentCorrectness("get_order", {"id": 1234}, match_mode="exact"), "passed"),
    ("args exact extra", ArgumentCorrectness("get_order", {"id": 1234, "x": 1}, match_mode="exact"), "failed"),
    ("args superset", ArgumentCorrectness("get_order", {"id": 1234, "x": 1}, match_mode="superset"), "passed"),
    ("args ignore", ArgumentCorrectness("get_order", {"anything": 0}, match_mode="ignore"), "passed"),
    ("args key mode", ArgumentCorrectness("search", {"q": "?"}, key_modes={"q": "ignore"}), "passed"),
    ("args key callable", ArgumentCorrectness("search", {"q": ""}, key_modes={"q": lambda a: "1234" in a}), "passed"),
    ("args ignore glob", ArgumentCorrectness("search", {"q": "?"}, ignore_keys=["*"]), "passed"),
    ("occurrence first failed", ArgumentCorrectness("search", {"q": "order 1234"}, include_failed=True), "passed"),
    ("occurrence last", ArgumentCorrectness("search", {"q": "order #1234"}, occurrence="last", include_failed=True), "passed"),
    ("occurrence index", ArgumentCorrectness("search", {"q": "order #1234"}, occurrence=1, include_failed=True), "passed"),
    ("occurrence index wrong", ArgumentCorrectness("search", {"q": "order #1234"}, occurrence=0, include_failed=True), "failed"),
    ("occurrence any", ArgumentCorrectness("search", {"q": "order 1234"}, occurrence="any", include_failed=True), "passed"),
    ("agent scope", ToolCorrectness(["search", "get_order"], agent="support"), "passed"),
    ("other agent", ToolCorrectness(["search"], agent="billing"), "not_evaluated"),
    ("budget incl. failed", MaxToolCalls(2), "failed"),
    ("run duration", MaxDuration(seconds=0.05), "passed"),
    ("run too slow", MaxDuration(seconds=0.001), "failed"),
    ("tool duration", MaxDuration(seconds=0.0001, tool="search"), "failed"),
    ("tool p50", MaxDuration(seconds=0.001, tool="search", percentile=50), "passed"),
    ("error spans", NoErrorSpans(), "failed"),
    ("tokens total", MaxTokens(max_total=710), "passed"),
    ("tokens over", MaxTokens(max_input=660, max_output=49), "failed"),
    ("no loops (args differ)", NoToolLoops(max_repeats=1), "passed"),
]  # fmt: skip


@pytest.mark.parametrize("name", FILES)
def test_every_mode_gives_the_stated_verdict_on_every_shipped_file(name: str) -> None:
    if name.endswith(".pb"):
        pytest.importorskip("opentelemetry.proto")
    [tree] = [t for t in load_traces(FIXTURES / name) if t.roots[0].trace_id == 0x5B8EFFF798038103D269B633813FC60C]
    results = grade(tree, [ev for _, ev, _ in CASES])
    got = {label: (r.outcome, r.reasoning) for (label, _, _), r in zip(CASES, results, strict=True)}
    wrong = {label: got[label] for label, _, want in CASES if got[label][0] != want}
    assert not wrong, wrong


def test_reasons_are_the_same_in_every_convention() -> None:
    reasons = {}
    for name in FILES[:4]:
        [tree] = load_traces(FIXTURES / name)
        reasons[name] = [r.reasoning for r in grade(tree, [ev for _, ev, _ in CASES])]
    base = reasons.pop(FILES[0])
    for name, other in reasons.items():
        diff = [(c[0], a, b) for c, a, b in zip(CASES, base, other, strict=True) if a != b]
        # names of spans differ by convention; a reason may only differ where it quotes one
        assert all(label in ("error spans", "run duration", "run too slow") for label, _, _ in diff), (name, diff)


def test_a_real_run_graded_live_and_from_its_file_agree(tmp_path: Path) -> None:
    cap = run_captured([("search", {"q": "x"}), ("fetch", {"id": 7})], fail=[0])  # search fails once, retried
    evaluators: list[Any] = [
        TrajectoryMatch(["search", "fetch"], order="strict"),
        TrajectoryMatch([{"tool": "search", "args": {"q": "x"}}, {"tool": "log", "optional": True}, "fetch"]),
        TrajectoryMatch(["fetch"], order="superset"),
        ArgumentCorrectness("fetch", {"id": 7}, match_mode="exact"),
        ArgumentCorrectness("search", {"q": "x"}, occurrence="any", include_failed=True),
        NoToolLoops(max_repeats=1),
        NoErrorSpans(allow_retries=True),
        MaxTokens(max_total=10_000),
        MaxDuration(seconds=60, tool="search", percentile=90),
        ToolCorrectness(["search", "fetch"], agent="nobody"),
    ]
    live = [(r.outcome, r.reasoning) for r in grade(cap, evaluators)]
    for kwargs in ({}, {"lines": True, "batch_size": 2}):
        path = write_otlp_json(cap, tmp_path / f"run{len(kwargs)}.json.gz", **kwargs)
        assert [(r.outcome, r.reasoning) for r in grade(path, evaluators)] == live
    assert [o for o, _ in live] == ["passed"] * 5 + ["failed", "passed", "passed", "passed", "not_evaluated"], live


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
