"""`pytest --tracegrade-record` writes each eval run as an OTLP/JSON fixture; `recorded_trace` and
`load_traces` grade them back in ordinary tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _plugin_helpers import PYDANTIC_AGENT, clean_agent_eval_env, src  # noqa: F401
from test_plugin_report import FAST_WORKERS
from tracegrade import grade, load_traces
from tracegrade.dialects import extract
from tracegrade.evaluators import ArgumentCorrectness, ToolCorrectness
from tracegrade.ingest._traces import recording_id
from tracegrade.pytest_plugin.record import fixture_stem, recorded_trace

EVALS = src(
    """
    import pytest
    from agents import make_agent
    from tracegrade import Turn, Expect

    agent = make_agent(reply="Booked")

    async def call(history):
        return (await agent.run(history[-1]["content"])).output

    @pytest.mark.agent_eval(runs=2)
    async def test_books(agent_eval):
        turns = [Turn('search {"q": "table"}\\nbook {"time": "10am"}', expect=Expect(tool_calls_include=["book"])),
                 Turn('fetch {"id": 7}', expect=Expect(tool_calls_include=["fetch"]))]
        (await agent_eval.run(agent=call, turns=turns)).assert_threshold()

    @pytest.mark.agent_eval
    @pytest.mark.parametrize("when", ["9am", "a/b c"])
    async def test_time(agent_eval, when):
        turn = Turn(f'book {{"time": "{when}"}}', expect=Expect(tool_calls_include=["book"]))
        (await agent_eval.run(agent=call, turns=[turn])).assert_threshold()

    def test_not_an_eval():
        pass
    """
)

REPLAY = src(
    """
    from tracegrade import grade
    from tracegrade.evaluators import ArgumentCorrectness, TrajectoryMatch

    def test_replay(recorded_trace):
        tree = recorded_trace("test_evals.py::test_books", run=2)
        results = grade(tree, [TrajectoryMatch(["search", "book", "fetch"], order="exact"),
                               ArgumentCorrectness("book", {"time": "10am"})])
        assert all(r.passed for r in results), [r.reasoning for r in results]
        same = recorded_trace("test_evals/test_time[9am]-run1")
        assert grade(same, [ArgumentCorrectness("book", {"time": "9am"})])[0].passed
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(agents=PYDANTIC_AGENT, test_evals=EVALS)
    pytester.syspathinsert()
    return pytester


def _recordings(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.json")) if root.is_dir() else []


def test_record_writes_one_file_per_test_and_run_that_grades_like_the_live_run(project: pytest.Pytester) -> None:
    result = project.runpytest("--tracegrade-record", "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(passed=4)  # recording runs the evals without --agent-eval-live
    traces = project.path / "fixtures" / "traces"
    result.stdout.fnmatch_lines([f"agent_eval: 4 run(s) recorded under {traces}"])
    odd = fixture_stem("test_evals.py::test_time[a/b c]")
    assert odd.startswith("test_evals/test_time[a_b_c]-") and len(odd) == len("test_evals/test_time[a_b_c]-") + 8
    assert _recordings(traces) == sorted(
        [
            "test_evals/test_books-run1.json",
            "test_evals/test_books-run2.json",
            "test_evals/test_time[9am]-run1.json",
            f"{odd}-run1.json",
        ]
    )
    doc = json.loads((traces / "test_evals/test_books-run1.json").read_text())
    assert doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]  # plain OTLP/JSON

    [run] = load_traces(traces / "test_evals/test_books-run1.json")  # one recorded run: one unit
    assert len(run.trace_ids) == 2  # of two traces, one per turn (each agent.run is its own trace)
    assert recording_id(run) == "test_evals/test_books-run1"
    checks = [ToolCorrectness(["search", "book", "fetch"]), ArgumentCorrectness("book", {"time": "10am"})]
    assert all(r.passed for r in grade(run, checks))
    whole = recorded_trace("test_evals/test_books-run1", directory=traces)
    assert extract(whole).tool_calls == extract(run).tool_calls == ["search", "book", "fetch"]
    assert [n.span for n in whole] == [n.span for n in run]
    assert len(run.roots) == 2 and len(run) == 6 + 4  # the second turn: invoke_agent, two model requests, one tool
    units = sorted(recording_id(t) or "" for t in load_traces(traces))
    assert units == [r.removesuffix(".json") for r in _recordings(traces)]  # one unit per recorded run

    project.makepyfile(test_replay=REPLAY)
    project.runpytest("test_replay.py", "-p", "no:asyncio").assert_outcomes(passed=1)


def test_nothing_is_written_without_the_flag(project: pytest.Pytester) -> None:
    project.runpytest("-p", "no:asyncio").assert_outcomes(passed=1, skipped=3)
    project.runpytest("--agent-eval-live", "-p", "no:asyncio").assert_outcomes(passed=4)
    assert not (project.path / "fixtures").exists()


def test_rerecording_replaces_a_tests_old_runs(project: pytest.Pytester) -> None:
    traces = project.path / "fixtures" / "traces"
    project.runpytest("--tracegrade-record", "-p", "no:asyncio", "-k", "books").assert_outcomes(passed=1)
    (project.path / "test_evals.py").write_text(EVALS.replace("agent_eval(runs=2)", "agent_eval(runs=1)"))
    project.runpytest("--tracegrade-record", "-p", "no:asyncio", "-k", "books").assert_outcomes(passed=1)
    assert _recordings(traces) == ["test_evals/test_books-run1.json"]


def test_record_dir_and_record_from_pyproject_and_the_fixture_uses_it(project: pytest.Pytester) -> None:
    project.makepyprojecttoml('[tool.agent_eval]\nrecord = true\nrecord_dir = "evals/recorded"\n')
    project.runpytest("-p", "no:asyncio", "-k", "books").assert_outcomes(passed=1)
    assert _recordings(project.path / "evals" / "recorded") == [
        "test_evals/test_books-run1.json",
        "test_evals/test_books-run2.json",
    ]
    project.makepyfile(
        test_replay=src(
            """
            import pytest

            def test_missing(recorded_trace):
                with pytest.raises(FileNotFoundError, match=r"closest: test_evals/test_books-run1.json"):
                    recorded_trace("test_evals/test_book-run1")
                assert len(list(recorded_trace("test_evals.py::test_books"))) == 6 + 4  # both turns
            """
        )
    )
    project.runpytest("test_replay.py", "-p", "no:asyncio").assert_outcomes(passed=1)


def test_xdist_workers_record_and_the_controller_counts_them(project: pytest.Pytester) -> None:
    result = project.runpytest("-n", "2", "--tracegrade-record", *FAST_WORKERS)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["agent_eval: 4 run(s) recorded under *"])
    assert len(_recordings(project.path / "fixtures" / "traces")) == 4


def test_recorded_trace_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"record them with `pytest --tracegrade-record`"):
        recorded_trace("nope", directory=tmp_path)
    with pytest.raises(ValueError, match="run must be an integer >= 1, got 0"):
        recorded_trace("t.py::x", run=0, directory=tmp_path)


def test_fixture_stems_are_stable_and_distinct() -> None:
    assert fixture_stem("tests/test_a.py::test_x") == "tests/test_a/test_x"
    assert fixture_stem("tests/test_a.py::TestCls::test_x[p1-2]") == "tests/test_a/TestCls.test_x[p1-2]"
    assert fixture_stem("evals/support.yaml::refund") == "evals/support/refund"
    a, b = fixture_stem("t.py::x[a b]"), fixture_stem("t.py::x[a_b]")
    assert a != b and b == "t/x[a_b]"
    assert fixture_stem("t.py::x[a b]") == a  # same node id, same name, every session


COLLIDING = src(
    """
    import pytest
    from agents import make_agent
    from tracegrade import Turn, Expect

    agent = make_agent(reply="Booked")
    IDS = {"a::b": "1pm", "a.b": "2pm", "x" * 300: "3pm", "y" * 250 + "::z": "4pm"}

    async def call(history):
        return (await agent.run(history[-1]["content"])).output

    @pytest.mark.agent_eval
    @pytest.mark.parametrize("when", [pytest.param(when, id=name) for name, when in IDS.items()])
    async def test_time(agent_eval, when):
        turn = Turn(f'book {{"time": "{when}"}}', expect=Expect(tool_calls_include=["book"]))
        (await agent_eval.run(agent=call, turns=[turn])).assert_threshold()
    """
)

COLLIDING_REPLAY = src(
    """
    from tracegrade import grade
    from tracegrade.evaluators import ArgumentCorrectness
    from test_colliding import IDS

    def test_each_id_finds_its_own_run(recorded_trace):
        for name, when in IDS.items():
            tree = recorded_trace(f"test_colliding.py::test_time[{name}]")
            assert grade(tree, [ArgumentCorrectness("book", {"time": when})])[0].passed, name
    """
)


def test_ids_that_read_alike_or_are_too_long_record_to_distinct_files_found_by_node_id(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(agents=PYDANTIC_AGENT, test_colliding=COLLIDING)
    pytester.syspathinsert()
    result = pytester.runpytest("--tracegrade-record", "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(passed=4)  # today: `File name too long` for the two long ids
    recordings = _recordings(pytester.path / "fixtures" / "traces")
    assert len(recordings) == 4  # today `t[a::b]` and `t[a.b]` share one file
    assert "test_colliding/test_time[a.b]-run1.json" in recordings  # the readable name stays when it is unique
    assert all(len(part.encode()) <= 255 for r in recordings for part in r.split("/"))
    pytester.makepyfile(test_replay=COLLIDING_REPLAY)
    pytester.runpytest("test_replay.py", "-p", "no:asyncio").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("nodeid", "stem"),
    [
        ("tests/test_support.py::test_refund", "tests/test_support/test_refund"),
        ("tests/test_a.py::TestX::test_b[1.5-gpt]", "tests/test_a/TestX.test_b[1.5-gpt]"),
        ("tests/evals/refund.yaml::refund_case", "tests/evals/refund/refund_case"),
        ("tests/evals/refund.yml::refund_case", "tests/evals/refund/refund_case"),
        ("t.py::t[a.b]", "t/t[a.b]"),
    ],
)
def test_safe_unique_ids_keep_their_readable_names(nodeid: str, stem: str) -> None:
    assert fixture_stem(nodeid) == stem


@pytest.mark.parametrize(
    ("nodeid", "other"),
    [
        ("t.py::t[a::b]", "t.py::t[a.b]"),
        ("t.py::T::t", "t.py::T.t"),
        ("a.yaml.py::t", "a.yaml::t"),
        ("a.py::t", "a::t"),
        ("a//b.py::t", "a/b.py::t"),
        ("a.py::t-0123abcd", "a.py::t"),
    ],
)
def test_ids_that_would_read_alike_get_distinct_names(nodeid: str, other: str) -> None:
    assert fixture_stem(nodeid) != fixture_stem(other)


TRANSCRIPT = src(
    """
    id: booking
    turns:
      - user: 'book {"time": "10am"}'
        expect: {tool_calls_include: [book]}
      - user: 'fetch {"id": 3}'
        expect: {tool_calls_include: [fetch]}
    """
)

YAML_REPLAY = src(
    """
    from tracegrade import grade
    from tracegrade.evaluators import ArgumentCorrectness, TrajectoryMatch

    def test_replay_by_node_id(recorded_trace):
        tree = recorded_trace("evals/booking.yaml::booking")
        assert grade(tree, [TrajectoryMatch(["book", "fetch"], order="exact"),
                            ArgumentCorrectness("book", {"time": "10am"})])[0].passed
    """
)


def test_yaml_transcripts_record_without_the_yaml_suffix_and_replay_by_node_id(pytester: pytest.Pytester) -> None:
    from test_plugin_yaml import CONFTEST

    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makepyfile(agents=PYDANTIC_AGENT)
    pytester.makeconftest(CONFTEST)
    pytester.syspathinsert()
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "booking.yaml").write_text(TRANSCRIPT)
    pytester.runpytest("--tracegrade-record", "-p", "no:asyncio", "-p", "no:anyio").assert_outcomes(passed=1)
    traces = pytester.path / "fixtures" / "traces"
    assert _recordings(traces) == ["evals/booking/booking-run1.json"]
    [run] = load_traces(traces)
    assert recording_id(run) == "evals/booking/booking-run1" and extract(run).tool_calls == ["book", "fetch"]
    pytester.makepyfile(test_replay=YAML_REPLAY)
    pytester.runpytest("test_replay.py", "-p", "no:asyncio").assert_outcomes(passed=1)


def test_a_transcript_beside_a_python_test_file_of_its_name_keeps_its_suffix(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "refund.yaml").write_text(TRANSCRIPT)
    assert fixture_stem("evals/refund.yaml::t", tmp_path) == "evals/refund/t"
    (tmp_path / "evals" / "refund.py").write_text("def t(): pass\n")  # `evals/refund.py::t` reads `evals/refund/t`
    assert fixture_stem("evals/refund.yaml::t", tmp_path) == "evals/refund.yaml/t"
    assert fixture_stem("evals/refund.py::t", tmp_path) == "evals/refund/t"


def test_the_recorder_writes_a_captures_log_records_and_recorded_trace_reads_them(tmp_path: Path) -> None:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.trace import TracerProvider

    from tracegrade import capture
    from tracegrade.pytest_plugin.record import TraceRecorder

    tp, lp = TracerProvider(), LoggerProvider(shutdown_on_exit=False)
    try:
        with capture(provider=tp, logger_provider=lp) as cap, tp.get_tracer("t").start_as_current_span("chat"):
            lp.get_logger("t").emit(event_name="gen_ai.user.message", body={"content": "hi"})
    finally:
        lp.shutdown()
        tp.shutdown()
    recorder = TraceRecorder(tmp_path, tmp_path)
    recorder.save("t.py::test_x", cap)
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["test_x-run1.json", "test_x-run1.logs.json"]
    tree = recorded_trace("t.py::test_x", directory=tmp_path, root=tmp_path)
    [node] = tree
    assert [(r.event_name, r.body) for r in node.logs] == [("gen_ai.user.message", {"content": "hi"})]
    [loaded] = load_traces(tmp_path)  # the logs file is not a trace: one unit, records attached
    assert [r.event_name for r in next(iter(loaded)).logs] == ["gen_ai.user.message"]
    TraceRecorder(tmp_path, tmp_path).save("t.py::test_x", cap.spans)  # re-recorded without records
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["test_x-run1.json"]
