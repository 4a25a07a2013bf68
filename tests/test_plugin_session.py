"""`EvalSession` on its own: history, return types, custom evaluators, scores, retries, timeouts."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from _agents import scripted_agent
from tracegrade import AgentReply, EvalResult, Expect, ToolCall, Turn, TurnContext
from tracegrade.evaluators import TrajectoryMatch
from tracegrade.pytest_plugin.session import MAX_LISTED_FAILURES, EvalSession, TranscriptResult, normalize_reply


def run(agent: Any, turns: list[Turn], **session: Any) -> TranscriptResult:
    config = session.pop("config", {})
    return EvalSession(config=config, **session).run_sync(agent, turns)


class Seen:
    """A custom evaluator (no base class) that records the contexts it was given."""

    def __init__(self) -> None:
        self.contexts: list[TurnContext] = []

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        self.contexts.append(ctx)
        return EvalResult(True, "seen")


def test_history_is_openai_format_accumulated_across_turns() -> None:
    received: list[list[dict[str, Any]]] = []
    seen = Seen()

    async def agent(history: list[dict[str, Any]]) -> str:
        received.append(history)
        return f"answer {len(history)}"

    run(agent, [Turn("one", expect=Expect(evaluators=[seen])), Turn("two", expect=Expect(evaluators=[seen]))], runs=1)
    assert received == [
        [{"role": "user", "content": "one"}],
        [{"role": "user", "content": "one"}, {"role": "assistant", "content": "answer 1"},
         {"role": "user", "content": "two"}],
    ]  # fmt: skip
    assert [c.history for c in seen.contexts] == received
    assert [(c.user, c.reply) for c in seen.contexts] == [("one", "answer 1"), ("two", "answer 3")]


def test_sync_agents_run_in_worker_threads_so_runs_stay_concurrent() -> None:
    barrier = threading.Barrier(3, timeout=5)  # breaks (and the agent raises) unless all three run at once

    def agent(history: list[dict[str, Any]]) -> str:
        barrier.wait()
        return "ok"

    result = run(agent, [Turn("hi")], runs=3, config={"agent_retries": 0})
    assert result.score == 1.0, result.runs[0].error


def test_a_sync_pydantic_ai_run_sync_agent_works() -> None:
    agent = scripted_agent([("search", {"q": "x"})], reply="found")
    result = run(lambda h: agent.run_sync(h[-1]["content"]).output, [Turn("go", expect=Expect(tool_calls_include=["search"]))])
    assert result.passed and result.runs[0].turn_results[0].tool_calls_source == "spans"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("text", ("text", [], [])),
        (AgentReply("r", ["a", ToolCall("b", {"x": 1})]), ("r", ["a", "b"], [])),
        (("r", ["a", ("b", {"x": 1}), {"name": "c", "args": {}}]), ("r", ["a", "b", "c"], [])),
        (["r", None], ("r", [], [])),
    ],
)
def test_return_values_are_normalised(output: Any, expected: tuple[str, list[str], list[Any]]) -> None:
    reply, calls, messages = normalize_reply(output)
    assert (reply, [c.name for c in calls], messages) == expected
    if isinstance(output, tuple):
        assert calls[1].args == {"x": 1}


def test_an_unusable_return_value_fails_the_run_without_retrying() -> None:
    attempts = []

    async def agent(history: list[dict[str, Any]]) -> Any:
        attempts.append(1)
        return 42

    result = run(agent, [Turn("hi")], config={"agent_retries": 3})
    [r] = result.runs
    assert not r.passed and len(attempts) == 1 and r.attempts == 1
    assert "must return an AgentReply, a str or a (reply, tool_calls) pair, got int: 42" in (r.error or "")
    assert r.turn_results[0].eval_results[0].outcome == "error"


def test_a_raising_agent_is_retried_then_the_run_fails_with_the_error() -> None:
    attempts = []

    async def agent(history: list[dict[str, Any]]) -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("rate limited")
        return "ok"

    assert run(agent, [Turn("hi")], config={"agent_retries": 2}).passed and len(attempts) == 3
    attempts.clear()
    result = run(agent, [Turn("hi")], config={"agent_retries": 1})
    assert not result.passed
    line = agent.__code__.co_firstlineno + 3  # where it raises
    assert result.runs[0].error == (
        f"the agent raised ConnectionError: rate limited (at test_plugin_session.py:{line} in agent) (after 2 attempts)"
    )


def test_a_tool_that_ran_before_the_agent_raised_is_reported_from_its_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    tracer = provider.get_tracer("app")

    async def agent(history: list[dict[str, Any]]) -> str:
        with tracer.start_as_current_span(
            "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
        ), tracer.start_as_current_span(
            "execute_tool refund",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund",
                        "gen_ai.tool.call.arguments": '{"order": 7}'},
        ):  # fmt: skip
            pass
        raise RuntimeError("model quota exceeded")

    result = run(agent, [Turn("refund order 7")], config={"agent_retries": 0}, provider=provider)
    [turn] = result.runs[0].turn_results
    assert turn.error is not None and turn.error.startswith("the agent raised RuntimeError: model quota exceeded (at ")
    assert [(c.name, c.args) for c in turn.tool_calls] == [
        ("refund", {"order": 7})
    ] and turn.tool_calls_source == "spans"


def test_a_retried_run_starts_again_from_the_first_turn() -> None:
    seen: list[str] = []

    async def agent(history: list[dict[str, Any]]) -> str:
        seen.append(history[-1]["content"])
        if seen == ["one", "two"]:
            raise RuntimeError("flaky")
        return "ok"

    result = run(agent, [Turn("one"), Turn("two")], config={"agent_retries": 1})
    assert result.passed and seen == ["one", "two", "one", "two"] and result.runs[0].attempts == 2


def test_a_slow_agent_times_out_and_fails_the_turn() -> None:
    async def agent(history: list[dict[str, Any]]) -> str:
        await asyncio.sleep(5)
        return "late"

    result = run(agent, [Turn("hi"), Turn("never reached")], config={"agent_timeout": 0.05})
    [r] = result.runs
    assert not r.passed and len(r.turn_results) == 1
    assert r.error == "the agent did not answer turn 1 within 0.05s (agent_timeout)"


def test_custom_evaluators_sync_or_async_returning_results_bools_or_scores() -> None:
    class SyncBool:
        def evaluate(self, ctx: TurnContext) -> bool:
            return "ok" in ctx.reply

    class Score:
        def __init__(self, value: float, threshold: float | None = None) -> None:
            self.value = value
            if threshold is not None:
                self.threshold = threshold

        async def evaluate(self, ctx: TurnContext) -> float:
            return self.value

    class Broken:
        def evaluate(self, ctx: TurnContext) -> EvalResult:
            raise KeyError("oops")

    async def agent(history: list[dict[str, Any]]) -> str:
        return "ok"

    result = run(agent, [Turn("hi", expect=Expect(evaluators=[SyncBool(), Score(0.6, 0.5), Score(0.6), Broken()]))])
    verdicts = result.runs[0].turn_results[0].eval_results
    assert [v.outcome for v in verdicts] == ["passed", "passed", "failed", "error"]
    assert verdicts[2].reasoning == "score 0.600, threshold 1" and "Broken raised KeyError" in verdicts[3].reasoning


def test_agentic_evaluators_work_in_expect_with_their_threshold() -> None:
    agent = scripted_agent([("a", {}), ("x", {}), ("b", {})])

    async def call(history: list[dict[str, Any]]) -> str:
        return (await agent.run("go")).output

    loose = Expect(evaluators=[TrajectoryMatch(["a", "b", "c"], threshold=0.6)])
    strict = Expect(evaluators=[TrajectoryMatch(["a", "b", "c"])])
    assert run(call, [Turn("go", expect=loose)]).passed
    failed = run(call, [Turn("go", expect=strict)])
    assert not failed.passed and failed.runs[0].turn_results[0].eval_results[0].score == pytest.approx(2 / 3)


def test_not_evaluated_fails_by_default_and_skip_leaves_it_out() -> None:
    async def agent(history: list[dict[str, Any]]) -> str:
        return "no spans here"

    only_spans = [Turn("hi", expect=Expect(max_tool_calls=3))]
    result = run(agent, only_spans)
    assert not result.passed and result.not_evaluated == "fail"
    assert result.runs[0].turn_results[0].eval_results[0].outcome == "not_evaluated"
    assert result.outcome_counts == {"passed": 0, "failed": 0, "not_evaluated": 1, "error": 0}
    with pytest.raises(AssertionError, match=r"MaxToolCalls \[not_evaluated\]"):
        result.assert_threshold()

    skipped = run(agent, only_spans, config={"not_evaluated": "skip"})
    assert skipped.passed and not skipped.evaluated and skipped.runs[0].turn_results[0].failures == []
    with pytest.raises(pytest.skip.Exception, match=r"no check could be evaluated.*MaxToolCalls \[not_evaluated\]"):
        skipped.assert_threshold()  # passing on no evidence at all is a skip, not a pass

    mixed = [Turn("hi", expect=Expect(max_tool_calls=3, reply_contains_any=["spans"]))]
    assert not run(agent, mixed).passed
    judged = run(agent, mixed, config={"not_evaluated": "skip"})
    assert judged.passed and judged.evaluated
    assert judged.outcome_counts == {"passed": 1, "failed": 0, "not_evaluated": 1, "error": 0}
    judged.assert_threshold()  # the evaluated check decides
    wrong = [Turn("hi", expect=Expect(max_tool_calls=3, reply_contains_any=["nope"]))]
    assert not run(agent, wrong, config={"not_evaluated": "skip"}).passed
    with pytest.raises(ValueError, match="not_evaluated must be 'fail' or 'skip', got 'pass'"):
        EvalSession(config={"not_evaluated": "pass"})


def test_run_arguments_are_validated() -> None:
    session = EvalSession()
    with pytest.raises(ValueError, match="at least one Turn"):
        session.run_sync(lambda h: "x", [])
    with pytest.raises(ValueError, match="runs must be an integer >= 1"):
        session.run_sync(lambda h: "x", [Turn("hi")], runs=0)
    with pytest.raises(ValueError, match="threshold must be a number between 0 and 1"):
        session.run_sync(lambda h: "x", [Turn("hi")], threshold=1.5)
    with pytest.raises(TypeError, match=r"turns\[0\] must be a Turn"):
        session.run_sync(lambda h: "x", ["hi"])  # type: ignore[list-item]


def test_run_sync_inside_an_event_loop_says_to_await() -> None:
    async def main() -> None:
        EvalSession().run_sync(lambda h: "x", [Turn("hi")])

    with pytest.raises(RuntimeError, match="use `await agent_eval.run"):
        asyncio.run(main())


def test_assert_threshold_lists_the_failed_checks_with_the_trajectory() -> None:
    result = run(lambda h: AgentReply("nope", ["search"]), [Turn("hi", expect=Expect(tool_calls_include=["book"]))], runs=2)
    with pytest.raises(AssertionError) as excinfo:
        result.assert_threshold()
    message = str(excinfo.value)
    assert message.startswith("LLM eval failed: score=0.00 < threshold=0.80 (0/2 runs passed)")
    assert "run 2, turn 1: ToolCallEvaluator [failed]: Expected tool 'book' not in" in message
    assert "trajectory (returned): search" in message


def test_assert_threshold_lists_every_failed_check_up_to_a_limit_and_counts_the_rest() -> None:
    turns = [Turn(f"q{i}", expect=Expect(reply_contains_any=["yes"])) for i in range(MAX_LISTED_FAILURES + 3)]
    result = run(lambda h: "no", turns)
    assert len(result.describe_failures()) == MAX_LISTED_FAILURES + 3
    with pytest.raises(AssertionError) as excinfo:
        result.assert_threshold()
    lines = str(excinfo.value).splitlines()
    assert len(lines) == 1 + MAX_LISTED_FAILURES + 1
    assert lines[MAX_LISTED_FAILURES].startswith(f"  run 1, turn {MAX_LISTED_FAILURES}: ContainsEvaluator [failed]")
    assert lines[-1] == "  ... and 3 more failed check(s)"
    few = run(lambda h: "no", turns[:2])
    with pytest.raises(AssertionError) as excinfo:
        few.assert_threshold()
    assert len(str(excinfo.value).splitlines()) == 3 and "more failed" not in str(excinfo.value)


def test_a_turns_audio_reaches_the_agent_in_its_history_message(tmp_path: Path) -> None:
    seen: list[list[dict[str, Any]]] = []
    wav = tmp_path / "book.wav"

    def agent(history: list[dict[str, Any]]) -> str:
        seen.append([dict(m) for m in history])
        return "ok"

    run(agent, [Turn("book", audio=wav), Turn("thanks"), Turn("again", audio="rel/again.wav")])
    assert seen[-1] == [
        {"role": "user", "content": "book", "audio": str(wav)},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "again", "audio": "rel/again.wav"},
    ]
    with pytest.raises(TypeError, match=r"^Turn\.audio must be a path \(str or os\.PathLike\), got int: 3"):
        Turn("x", audio=3)  # type: ignore[arg-type]
    turn = Turn("x")
    turn.audio = 3  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"^turns\[0\]: Turn\.audio must be a path \(str or os\.PathLike\), got int: 3"):
        run(agent, [turn])


def test_results_are_kept_and_reported() -> None:
    reported: list[TranscriptResult] = []
    session = EvalSession(on_result=reported.append)
    result = session.run_sync(lambda h: "x", [Turn("hi")])
    assert session.results == reported == [result]


def test_expect_rejects_bad_fields_at_construction() -> None:
    with pytest.raises(ValueError, match=r"reply_matches_all\[0\]: Invalid regex pattern"):
        Expect(reply_matches_all=["("])
    with pytest.raises(ValueError, match=r"evaluators\[0\]: .* has no evaluate\(ctx\) method"):
        Expect(evaluators=["not an evaluator"])
    with pytest.raises(ValueError, match=r"spans\[0\]: .*unknown SpanQuery key 'nme'"):
        Expect(spans=[{"nme": "x"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_tool_calls: must be an integer >= 0"):
        Expect(max_tool_calls=-1)
    with pytest.raises(ValueError, match="trajectory.order: must be"):
        Expect(trajectory={"expected_trajectory": ["a"], "order": "sorted"})
    with pytest.raises(ValueError, match="Turn.expect must be an Expect"):
        Turn("hi", expect={"reply_contains_any": ["x"]})  # type: ignore[arg-type]


def test_spans_of_a_private_tracer_provider_are_recorded_when_given() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    agent = scripted_agent([("search", {"q": "x"})], tracer_provider=provider)

    async def call(history: list[dict[str, Any]]) -> str:
        return (await agent.run("go")).output

    turns = [Turn("go", expect=Expect(tool_calls_include=["search"]))]
    assert not run(call, turns).passed  # the global provider never sees these spans
    result = EvalSession(provider=provider).run_sync(call, turns)
    assert result.passed and result.tool_calls_sources == ["spans"]


# --- bug: changing an Expect after it was built was ignored (the evaluators were built once) ---


def test_fields_changed_after_construction_are_graded_when_the_turn_runs() -> None:
    from tracegrade import ContainsEvaluator, ToolCallArgsConfig

    def agent(history: list[dict[str, Any]]) -> AgentReply:
        return AgentReply("Booked", [ToolCall("search", {"q": "table"})])

    appended = Expect(reply_contains_any=["booked"])
    appended.tool_calls_exclude.append("search")
    assigned = Expect()
    assigned.reply_contains_any = ["confirmed"]
    added = Turn("hi")
    added.expect.evaluators.append(ContainsEvaluator(any_of=["cancelled"]))
    config = ToolCallArgsConfig("search", {"q": "table"})
    config.args = {"q": "chairs"}
    reasons = []
    for turn in [Turn("hi", expect=appended), Turn("hi", expect=assigned), added,
                 Turn("hi", expect=Expect(tool_calls_args=[config]))]:  # fmt: skip
        result = run(agent, [turn], threshold=1.0)
        assert not result.passed
        reasons.append([(v.name, v.passed, v.reasoning) for v in result.runs[0].turn_results[0].eval_results])
    assert reasons[0][1] == ("ContainsEvaluator", True, "All substring and pattern checks passed (contains 'booked')")
    assert reasons[0][0][:2] == ("ToolCallEvaluator", False) and "Forbidden tool 'search' was called" in reasons[0][0][2]
    assert reasons[1] == [("ContainsEvaluator", False, "Reply did not contain any of ['confirmed']")]
    assert reasons[2] == [("ContainsEvaluator", False, "Reply did not contain any of ['cancelled']")]
    assert [(name, ok) for name, ok, _ in reasons[3]] == [("ToolCallArgsEvaluator", False)]
    assert "expected {'q': 'chairs'}" in reasons[3][0][2]


def test_a_value_changed_after_construction_is_checked_before_any_agent_call() -> None:
    calls: list[int] = []

    def agent(history: list[dict[str, Any]]) -> str:
        calls.append(1)
        return "ok"

    regex = Expect()
    regex.reply_matches_any = ["BK-("]
    with pytest.raises(ValueError, match=r"^turns\[1\]\.expect\.reply_matches_any\[0\]: Invalid regex pattern"):
        run(agent, [Turn("fine"), Turn("hi", expect=regex)])
    typed = Expect(max_tool_calls=2)
    typed.max_tool_calls = "3"  # type: ignore[assignment]
    with pytest.raises(ValueError, match=r"^turns\[0\]\.expect\.max_tool_calls: must be an integer or None, got '3'"):
        run(agent, [Turn("hi", expect=typed)])
    judged = Expect(judge={"rubric": "polite"})
    judged.judge.rubric = " "  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"^turns\[0\]\.expect\.judge\.rubric: must be a non-empty string"):
        run(agent, [Turn("hi", expect=judged)])
    neither = Expect(tool_calls_args=[{"tool": "book", "args": {"time": "10am"}}])
    neither.tool_calls_args[0].args = None  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"^turns\[0\]\.expect\.tool_calls_args\[0\]: .*needs 'args'"):
        run(agent, [Turn("hi", expect=neither)])
    turn = Turn("hi")
    turn.user = 3  # type: ignore[assignment]
    with pytest.raises(ValueError, match=r"^turns\[0\]: Turn\.user must be a string, got int"):
        run(agent, [turn])
    assert calls == []


# --- bug: [tool.agent_eval] timeout / retries limited the agent instead of the judges (pytest-agent-eval's meaning) ---


def test_timeout_and_retries_limit_the_judges_that_set_none_and_the_agent_has_no_limit_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from tracegrade import JudgeConfig, JudgeEvaluator, ToolCallArgsConfig
    from tracegrade.evaluators import judge as judge_module

    monkeypatch.setattr(judge_module, "RETRY_BACKOFF_SECONDS", 0.0)
    async def slow_judge(messages: list[Any], info: AgentInfo) -> Any:
        await asyncio.sleep(0.3)
        raise AssertionError("never reached: every judge here times out")

    agent_calls: list[int] = []

    async def slow_agent(history: list[dict[str, Any]]) -> AgentReply:
        agent_calls.append(1)
        await asyncio.sleep(0.1)  # longer than the judges' timeout: the agent has no limit
        return AgentReply("Booked", [ToolCall("book", {"time": "10am"})])

    model = FunctionModel(slow_judge)
    expect = Expect(
        judge={"rubric": "Confirms.", "model": model},
        tool_calls_args=[ToolCallArgsConfig("book", judge=JudgeConfig("10am.", model=model, retries=1))],
        evaluators=[JudgeEvaluator("Polite.", model=model, timeout=0.01, retries=0)],
    )
    result = run(slow_agent, [Turn("book", expect=expect)], config={"timeout": 0.02, "retries": 0})
    [run_] = result.runs
    assert run_.error is None and run_.attempts == 1 and agent_calls == [1]
    verdicts = sorted((v.name, v.reasoning) for v in run_.turn_results[0].eval_results)
    assert verdicts == [
        ("JudgeEvaluator", "Judge failed after 1 attempt: timed out after 0.01s"),  # its own values
        ("JudgeEvaluator", "Judge failed after 1 attempt: timed out after 0.02s"),  # the session's
        ("ToolCallArgsJudgeEvaluator", "Judge failed after 2 attempts: timed out after 0.02s"),  # its retries=1
    ]


def test_an_agent_that_raises_is_called_once_and_agent_timeout_and_agent_retries_are_opt_in() -> None:
    calls: list[int] = []

    async def crashing(history: list[dict[str, Any]]) -> str:
        calls.append(1)
        raise RuntimeError("db down")

    [r] = run(crashing, [Turn("hi")]).runs
    assert calls == [1] and r.attempts == 1 and r.error is not None and "RuntimeError: db down" in r.error
    calls.clear()
    [r] = run(crashing, [Turn("hi")], config={"agent_retries": 2}).runs
    assert calls == [1, 1, 1] and r.attempts == 3 and (r.error or "").endswith("(after 3 attempts)")

    async def raises_timeout(history: list[dict[str, Any]]) -> str:
        raise TimeoutError("upstream")

    [r] = run(raises_timeout, [Turn("hi")]).runs  # its own TimeoutError, not a limit of ours
    assert (r.error or "").startswith("the agent raised TimeoutError: upstream")
    with pytest.raises(ValueError, match="agent_timeout must be a number of seconds > 0, got 0"):
        EvalSession(config={"agent_timeout": 0})
    with pytest.raises(ValueError, match="retries must be an integer >= 0, got -1"):
        EvalSession(config={"retries": -1})


# --- bug: EvalSession did not take pytest-agent-eval's constructor arguments ---


def test_eval_session_takes_pytest_agent_evals_arguments_with_their_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from tracegrade.evaluators import judge as judge_module
    from tracegrade.runner import EvalSession as PaeEvalSession

    assert PaeEvalSession is EvalSession
    params = list(inspect.signature(EvalSession).parameters.values())
    assert [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD] == [
        "threshold", "runs", "config_model", "judge_model", "judge_retries", "judge_timeout", "_item"
    ]  # fmt: skip
    monkeypatch.setattr(judge_module, "RETRY_BACKOFF_SECONDS", 0.0)
    attempts: list[int] = []

    def down(messages: list[Any], info: AgentInfo) -> Any:
        attempts.append(1)
        raise ConnectionError("API down")

    session = EvalSession(threshold=1.0, runs=1, config_model="openai:fallback", judge_model=FunctionModel(down),
                          judge_retries=1, judge_timeout=5.0)  # fmt: skip
    seen = Seen()
    turns = [Turn("hi", expect=Expect(evaluators=[seen], judge={"rubric": "Confirms."}))]
    result = session.run_sync(lambda h: "hello", turns)
    assert (seen.contexts[0].config["model"], session.judge_retries, session.judge_timeout) == ("openai:fallback", 1, 5.0)
    [_, judged] = result.runs[0].turn_results[0].eval_results
    assert judged.reasoning == "Judge failed after 2 attempts: ConnectionError: API down" and len(attempts) == 2
    positional = EvalSession(0.5, 3, "a", "b", 0, 2.0, config={"model": "x", "retries": 4, "timeout": 9.0})
    assert (positional.threshold, positional.runs, positional.config["model"], positional.config["judge_model"]) == (
        0.5, 3, "a", "b")  # fmt: skip
    assert (positional.judge_retries, positional.judge_timeout) == (0, 2.0)  # the arguments win over `config`
    from_config = EvalSession(config={"model": "x", "retries": 4, "timeout": 9.0})
    assert (from_config.config["model"], from_config.judge_retries, from_config.judge_timeout) == ("x", 4, 9.0)
    assert (EvalSession().judge_retries, EvalSession().judge_timeout) == (2, 30.0)


# --- bug: eval_results listed the reply check before the tool check (pytest-agent-eval: tool check first) ---


def test_eval_results_are_in_pytest_agent_evals_order_then_tracegrades_own_fields() -> None:
    from tracegrade import ContainsEvaluator, ToolCallArgsConfig

    expect = Expect(
        spans=[{"name_contains": "book"}],
        max_tool_calls=3,
        trajectory=["search"],
        tool_calls_args=[ToolCallArgsConfig("search", {"q": 1})],
        judge={"rubric": "Confirms."},
        reply_contains_any=["booked"],
        tool_calls_include=["search"],
        evaluators=[ContainsEvaluator(any_of=["x"])],
    )
    result = run(lambda h: AgentReply("Booked", ["search"]), [Turn("hi", expect=expect)], threshold=0.0)
    names = [v.name for v in result.runs[0].turn_results[0].eval_results]
    assert names == [
        "ContainsEvaluator", "ToolCallEvaluator", "ContainsEvaluator", "JudgeEvaluator", "ToolCallArgsEvaluator",
        "TrajectoryMatch", "MaxToolCalls", "spans[0]",
    ]  # fmt: skip
    assert result.runs[0].turn_results[0].eval_results[2].reasoning.startswith("All substring and pattern checks")


# --- bug: Turn's positional order was (user, expect, audio); pytest-agent-eval's is (user, audio, expect) ---


def test_turns_positional_order_is_user_audio_expect(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def agent(history: list[dict[str, Any]]) -> str:
        seen.append(history[-1])
        return "nope"

    wav = tmp_path / "hi.wav"
    turn = Turn("hi", wav, Expect(reply_contains_any=["booked"]))
    assert (turn.audio, turn.expect.reply_contains_any) == (wav, ["booked"])
    result = run(agent, [turn])
    assert seen == [{"role": "user", "content": "hi", "audio": str(wav)}]
    assert result.runs[0].turn_results[0].eval_results[0].reasoning == "Reply did not contain any of ['booked']"
    with pytest.raises(TypeError, match=r"second positional parameter is `audio` .*pass the Expect as expect=\.\.\."):
        Turn("hi", Expect(reply_contains_any=["booked"]))  # type: ignore[arg-type]


# --- EvalSession(_item=...): pytest-agent-eval's hook for report plugins ---


def test_eval_session_stores_each_result_on_its_item_as_pytest_agent_eval_does() -> None:
    import types

    item = types.SimpleNamespace()
    session = EvalSession(threshold=0.0, runs=1, _item=item)
    first = session.run_sync(lambda h: "all good", [Turn("hi")])
    assert item._eval_result is first and first.passed
    second = session.run_sync(lambda h: "again", [Turn("hi")])
    assert item._eval_result is second


def test_the_agent_eval_fixture_leaves_its_result_on_the_test_item(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest

SEEN = []

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield
    if call.when == "call":
        result = getattr(item, "_eval_result", None)
        SEEN.append(None if result is None else (result.passed, result.score))

def pytest_sessionfinish(session):
    print("SEEN", SEEN)
"""
    )
    pytester.makepyfile(
        """
from tracegrade import Expect, Turn

def test_one(agent_eval):
    agent_eval.run_sync(lambda h: "booked", [Turn("hi", expect=Expect(reply_contains_any=["booked"]))])
"""
    )
    out = pytester.runpytest("--agent-eval-live", "-s", "-p", "no:cacheprovider")
    out.assert_outcomes(passed=1)
    out.stdout.fnmatch_lines(["*SEEN [[](True, 1.0)[]]"])
