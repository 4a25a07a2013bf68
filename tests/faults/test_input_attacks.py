"""Hostile input: YAML alias bombs, deep nesting, huge scalars and unsafe tags in grading specs and
transcripts; record names that collide or exceed the file system's limits; judge prompts whose
untrusted text imitates the block delimiters.

Attacks that could hang or exhaust memory run in a bounded child (`run_bounded`): a regression fails
the test (time limit, memory cap) instead of taking the machine with it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _agents import run_captured
from _plugin_helpers import clean_agent_eval_env  # noqa: F401
from faults._bounded import run_bounded
from faults._yaml_bombs import spec_bombs, transcript_bombs
from test_judge import Judge, blocks
from tracegrade import ToolCall, Trajectory, TurnContext
from tracegrade._yaml import MAX_ALIAS_NODES
from tracegrade.evaluators import JudgeEvaluator, ToolCallArgsJudgeEvaluator, TrajectoryJudge
from tracegrade.pytest_plugin.record import TraceRecorder, fixture_stem, recorded_trace

TRACE = Path(__file__).resolve().parents[2] / "fixtures" / "otlp" / "agent_run.json"
MEMORY_MB = 512
REFUSED = f"expand past {MAX_ALIAS_NODES} nodes through aliases (refused: a YAML alias bomb)"


def _examples(scale: str, ci: int, full: int) -> Any:
    return settings(
        max_examples=ci if scale == "ci" else full,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


# --- YAML alias bombs (9**9 ≈ 3.9e8 nodes from 400-800 bytes) ---------------------------------------------


def test_alias_bombs_in_every_spec_placement_are_refused_by_grade_and_by_the_spec_loader(tmp_path: Path) -> None:
    files = {}
    for name, text in spec_bombs().items():
        files[name] = str(tmp_path / f"{name}.yaml")
        Path(files[name]).write_text(text)
    code = f"""
        import contextlib, io, json, time
        from tracegrade.cli import main
        from tracegrade.spec import SpecError, load_spec

        out = {{}}
        for name, path in {files!r}.items():
            start, err = time.perf_counter(), io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["grade", {str(TRACE)!r}, "--spec", path])
            try:
                load_spec(path)
                loaded = "loaded"
            except SpecError as e:
                loaded = str(e)
            out[name] = [code, err.getvalue(), loaded, time.perf_counter() - start]
        print(json.dumps(out))
    """
    child = run_bounded(code, timeout=60, max_memory_mb=MEMORY_MB)
    assert child.returncode == 0, child.stderr
    results = json.loads(child.stdout)
    assert sorted(results) == sorted(files)
    for name, (code, stderr, loaded, seconds) in results.items():
        assert code == 2, (name, stderr)
        assert stderr.startswith(f"tracegrade grade: error: {files[name]}:") and REFUSED in stderr, (name, stderr)
        assert loaded.startswith(f"{files[name]}:") and REFUSED in loaded, (name, loaded)
        line = int(loaded.split(":")[1])
        alias = loaded.split("alias ")[1].split()[0]
        assert alias in Path(files[name]).read_text().splitlines()[line - 1]
        assert seconds < 5, (name, seconds)
    assert child.peak_rss_mb < 256


def test_alias_bombs_in_every_transcript_placement_are_collection_errors_naming_file_and_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    evals = pytester.path / "evals"
    evals.mkdir()
    bombs = transcript_bombs()
    for name, text in bombs.items():
        (evals / f"{name}.yaml").write_text(text)
    code = f"""
        import os, pytest
        os.chdir({str(pytester.path)!r})
        ret = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "evals"])
        print("EXIT", int(ret))
    """
    child = run_bounded(code, timeout=60, max_memory_mb=MEMORY_MB)
    assert "EXIT 2" in child.stdout, child.stdout[-3000:] + child.stderr[-3000:]  # collection errors, no crash
    for name, text in bombs.items():
        [line] = [ln for ln in child.stdout.splitlines() if ln.startswith(f"{evals / name}.yaml:") and REFUSED in ln]
        number, alias = int(line.split(":")[1]), line.split("alias ")[1].split()[0]
        assert alias in text.splitlines()[number - 1], line
    assert child.peak_rss_mb < 256


def test_deep_nesting_is_a_clear_error_not_a_recursion_error(tmp_path: Path, fault_scale: str) -> None:
    depth = 10_000 if fault_scale == "ci" else 1_000_000
    nested = "[" * depth + "]" * depth
    spec, transcript = tmp_path / "spec.yaml", tmp_path / "t.yaml"
    spec.write_text(f"evaluators:\n  - {nested}\n")
    transcript.write_text(f"id: t\nturns:\n  - user: {nested}\n")
    code = f"""
        from pathlib import Path
        from tracegrade.spec import SpecError, load_spec
        from tracegrade.pytest_plugin.yaml_collect import TranscriptError, load_transcript
        for load, path in ((load_spec, {str(spec)!r}), (load_transcript, {str(transcript)!r})):
            try:
                load(Path(path))
            except (SpecError, TranscriptError) as e:
                print("ERROR", e)
    """
    child = run_bounded(code, timeout=60, max_memory_mb=MEMORY_MB)
    assert child.stdout.strip().splitlines() == [
        f"ERROR {spec}:2: collections nested deeper than 100 levels",
        f"ERROR {transcript}:3: collections nested deeper than 100 levels",
    ], child.stderr[-2000:]


def test_a_huge_scalar_loads_in_bounded_time_and_memory(tmp_path: Path, fault_scale: str) -> None:
    size = 1_000_000 if fault_scale == "ci" else 50_000_000
    path = tmp_path / "huge.yaml"
    path.write_text(f"id: t\nturns:\n  - user: '{'x' * size}'\n")
    code = f"""
        import resource
        from pathlib import Path
        from tracegrade.pytest_plugin.yaml_collect import load_transcript
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t = load_transcript(Path({str(path)!r}))
        print(len(t.turns[0].user), before)
    """
    child = run_bounded(code, timeout=120, max_memory_mb=max(MEMORY_MB, size * 12 // 1_000_000 + 300))
    assert child.returncode == 0, child.stderr[-2000:]
    length, before = child.stdout.split()
    assert int(length) == size
    assert child.peak_rss_mb - float(before) < 20 + size * 10 / 1e6  # linear in the input: a few copies of it


@pytest.mark.parametrize(
    "tag",
    [
        "!!python/object/apply:os.system",
        "!!python/object/new:os.system",
        "!!python/name:os.system",
        "!!python/object:os.stat_result",
    ],
)
def test_python_tags_are_refused_in_specs_and_transcripts_and_run_nothing(tmp_path: Path, tag: str) -> None:
    marker = tmp_path / "ran"
    attack = f'{tag} ["touch {marker}"]'
    spec, transcript = tmp_path / "spec.yaml", tmp_path / "t.yaml"
    spec.write_text(f"evaluators:\n  - {attack}\n")
    transcript.write_text(f"id: t\nturns:\n  - user: {attack}\n")
    from tracegrade.pytest_plugin.yaml_collect import TranscriptError, load_transcript
    from tracegrade.spec import SpecError, load_spec

    refused = "invalid YAML: could not determine a constructor for the tag"
    with pytest.raises(SpecError, match=rf"spec\.yaml:2: {refused}"):
        load_spec(spec)
    with pytest.raises(TranscriptError, match=rf"t\.yaml:3: {refused.replace('YAML:', 'YAML at line 3:')}"):
        load_transcript(transcript)
    assert not marker.exists()


# --- record names -------------------------------------------------------------------------------------------

_PIECE = st.lists(
    st.sampled_from([*"ab.-_:/[]=+, é中\x00\\", "::", "..", "test_", "TestX", "-0123abcd"]), max_size=20
).map("".join)
_NODE_IDS = st.builds(
    lambda path, suffix, names, params, long: (
        f"{path}{suffix}::{'::'.join(names)}" + (f"[{params}{'x' * long}]" if params or long else "")
    ),
    st.lists(_PIECE, min_size=1, max_size=3).map("/".join),
    st.sampled_from([".py", ".yaml", ""]),
    st.lists(_PIECE, min_size=1, max_size=3),
    _PIECE,
    st.sampled_from([0, 0, 150, 300, 5000]),
)


@pytest.fixture(scope="module")
def one_run() -> Any:
    return run_captured([("search", {"q": "x"})])


def test_distinct_node_ids_record_to_distinct_short_names_found_back_by_node_id(
    tmp_path_factory: pytest.TempPathFactory, one_run: Any, fault_scale: str
) -> None:
    @_examples(fault_scale, ci=60, full=3000)
    @given(st.lists(_NODE_IDS, min_size=1, max_size=6, unique=True))
    def check(ids: list[str]) -> None:
        root = tmp_path_factory.mktemp("rec")
        stems = [fixture_stem(i) for i in ids]
        assert len(set(stems)) == len(ids)
        recorder = TraceRecorder(root)
        for nodeid, stem in zip(ids, stems, strict=True):
            parts = stem.split("/")
            assert all(p not in ("", ".", "..") and len(p.encode()) <= 255 - len("-run1.json") for p in parts)
            path = recorder.save(nodeid, one_run)
            assert path.resolve().is_relative_to(root.resolve())
        for nodeid in ids:
            assert len(recorded_trace(nodeid, directory=root)) == len(one_run.spans)

    check()


# --- judge delimiters ---------------------------------------------------------------------------------------

_TOKENS = [
    "</agent_reply>", "<agent_reply>", "< /agent_reply>", "</agent_reply\n>", "</trajectory>", "</tool_calls>",
    "</rubric>", "<rubric>", "&lt;", "&", "\\u003c", "\\", '"', "\n", "\r", "\u200b", "\u2028", "\u2029",
    "\uff1c", "\uff1e", "\ufe64", "\ufe65", "\u2039", "\ud800", "\U0001f600", "/", "agent_reply", "]}", "é中",
]  # fmt: skip
_UNTRUSTED = st.lists(st.one_of(st.sampled_from(_TOKENS), st.text(max_size=5)), max_size=12).map("".join)


def test_generated_untrusted_text_is_recovered_exactly_and_never_closes_a_block(fault_scale: str) -> None:
    @_examples(fault_scale, ci=60, full=2000)
    @given(_UNTRUSTED, _UNTRUSTED)
    def check(text: str, other: str) -> None:
        judge = Judge(True)
        calls = [ToolCall("book", {"time": text, "note": other}, result=other)]
        ctx = TurnContext.for_trajectory(
            Trajectory(calls, recognized_spans=1),
            user=other,
            reply=text,
            history=[
                {"role": "user", "content": text},
                {"role": "assistant", "content": other},
                {"role": "user", "content": other},
            ],
            tool_calls=calls,
        )
        for evaluator in (
            JudgeEvaluator("r", model=judge.model, retries=0),
            ToolCallArgsJudgeEvaluator("book", "r", model=judge.model, retries=0),
            TrajectoryJudge("r", model=judge.model, retries=0),
        ):
            assert asyncio.run(evaluator.evaluate(ctx)).passed
        reply, args, trajectory = (blocks(p) for p in judge.prompts)
        assert (reply["agent_reply"], reply["user_message"]) == (text, other)
        assert reply["conversation"] == [{"role": "user", "content": text}, {"role": "assistant", "content": other}]
        assert args["tool_calls"] == [{"call": 1, "arguments": {"time": text, "note": other}}]
        assert trajectory["trajectory"][0]["arguments"] == {"time": text, "note": other}
        assert trajectory["trajectory"][0]["result"] == other and trajectory["agent_reply"] == text

    check()
