"""`tracegrade` command line: `demo`, `grade TRACES --spec FILE`, `show TRACE`."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ._text import clip, printable
from .reporting import CaseRecord, Report, write
from .reporting.redact import Redactor, scrub_case
from .reporting.terminal import (
    OUTCOME_STYLE,
    print_case,
    print_heading,
    print_summary,
    results_table,
    trajectory_lines,
)
from .trajectory import Trajectory
from .tree import SpanNode, SpanTree

__all__ = ["main"]

_STYLE = OUTCOME_STYLE  # the receiver's live view colours outcomes the same way


def _demo(console: Console) -> int:
    from .demo import run_demo

    report = Report(title="tracegrade demo")
    for case, _cap, reply, results in run_demo():
        record = CaseRecord.from_results(case.name, results, reply=reply)
        report.cases.append(record)
        verdict = ("PASS", "green") if record.passed else ("FAIL", "red")
        print_heading(console, Text.assemble(verdict, " ", (case.name, "bold"), f": {case.prompt!r}"))
        console.print("trajectory (from spans):")
        for line in trajectory_lines(_cap.trajectory):
            console.print(line, highlight=False)
        console.print(Text(f"reply: {reply!r}"))
        console.print(results_table(results))
    console.print(Text.assemble("\n", ("demo: ", "bold"), report.summary,
                                " (one check is meant to fail, to show a failure's reason)"))  # fmt: skip
    return 0


def _traces(paths: Sequence[str], dialect: str | None) -> Iterator[tuple[str, SpanTree, Trajectory]]:
    """(label, tree, trajectory) of every trace, file by file, streaming (one trace in memory at a time)."""
    from .dialects import extract
    from .ingest import trace_files
    from .ingest._traces import logs_by_trace, recording_id, split_inputs, trees_of

    traces, logs = split_inputs(trace_files(list(paths)))
    if logs and not traces:
        raise _BadInput(_logs_only(logs))
    by_trace = logs_by_trace(logs)  # attached to the traces of every trace file
    for path in traces:
        for tree in trees_of([path], by_trace, logs_files=logs):
            root = tree.roots[0] if tree.roots else None
            label = f"{path}: {root.trace_id:032x} {root.name!r}" if root is not None else f"{path}: (empty)"
            if (rid := recording_id(tree)) is not None:  # a recorded run: every turn (trace) is one unit
                label = f"{path}: recording {rid!r} ({_turns(len(tree.trace_ids))})"
            yield label, tree, extract(tree, dialect=dialect)


def _logs_only(logs: Sequence[Path]) -> str:
    """Why nothing can be graded from logs files alone, and the trace files beside them to add."""
    names = ", ".join(map(str, logs[:3])) + (f" and {len(logs) - 3} more" if len(logs) > 3 else "")
    held = "holds" if len(logs) == 1 else "hold"
    siblings = [s for f in logs if ".logs." in f.name and (s := f.with_name(f.name.replace(".logs.", ".traces."))).is_file()]
    hint = f" (e.g. {siblings[0]})" if siblings else ""
    return (f"{names} {held} OpenTelemetry log records only, no spans: log records are read with the spans "
            f"they belong to, so pass the trace file as well{hint}")  # fmt: skip


def _turns(n: int) -> str:
    return "1 turn" if n == 1 else f"{n} turns"


def _turn_labels(tree: SpanTree, labels: Callable[[SpanNode], str]) -> Callable[[SpanNode], str]:
    """`labels`, with `  [turn k of n]` on the first root of each trace of a multi-turn recording."""
    ids = tree.trace_ids
    if len(ids) < 2:
        return labels
    turn = {tid: k for k, tid in enumerate(ids, 1)}
    first: dict[int, int] = {}  # trace id → id() of its first root (roots are in start order)
    for root in tree.roots:
        first.setdefault(root.trace_id, id(root))
    heads = set(first.values())
    return lambda node: (f"  [turn {turn[node.trace_id]} of {len(ids)}]" if id(node) in heads else "") + labels(node)


def _case_id(tree: SpanTree, key: str) -> str | None:
    """The value of attribute `key` on the trace's first span that has it (roots first)."""
    for node in (*tree.roots, *tree):
        value = node.attributes.get(key)
        if value is not None:
            return str(value)
    return None


def _with_judge_model(evaluators: list[object]) -> list[object]:
    """The spec's judges that name no model get the project's: `AGENT_EVAL_JUDGE_MODEL` /
    `AGENT_EVAL_MODEL`, else `judge_model` / `model` in `[tool.agent_eval]` of ./pyproject.toml
    (as the pytest plugin resolves them)."""
    import dataclasses

    from .evaluators.judge import JudgeParameters
    from .grading import Informational
    from .pytest_plugin.config import find_pyproject, resolve_settings

    if not any(isinstance(getattr(e, "evaluator", e), JudgeParameters) for e in evaluators):
        return evaluators
    settings, _ = resolve_settings(find_pyproject(Path.cwd(), None))
    model = settings.judge_model or settings.model
    if model is None:
        return evaluators

    def filled(ev: object) -> object:
        if isinstance(ev, Informational):
            return Informational(filled(ev.evaluator))
        if isinstance(ev, JudgeParameters) and ev.model is None:
            return dataclasses.replace(ev, model=model)
        return ev

    return [filled(ev) for ev in evaluators]


def _marked_informational(evaluators: list[object], names: Sequence[str], spec: str) -> list[object]:
    """The spec's evaluators with those named in `names` (`--informational`) marked `informational(...)`;
    a name no evaluator of the spec has is an error naming the closest one."""
    from ._hints import did_you_mean
    from .evaluators.base import evaluator_name
    from .grading import informational

    known = [evaluator_name(ev) for ev in evaluators]
    for name in names:
        if name not in known:
            hint = did_you_mean(name, dict.fromkeys(known), "its evaluators")
            raise _BadInput(f"--informational {name!r}: no evaluator of {spec} has that name{hint}")
    return [informational(ev) if evaluator_name(ev) in names else ev for ev in evaluators]


def _grade(args: argparse.Namespace, console: Console) -> int:
    from .grading import grade, informational_names
    from .reporting.trace import expected_steps, trace_view
    from .spec import load_spec

    if args.output is not None and args.format == "table":
        raise _BadInput("-o writes a report file: choose --format json, junit, markdown or html")
    evaluators = _with_judge_model(_marked_informational(load_spec(args.spec), args.informational, args.spec))
    redactor = Redactor(args.redact)
    expected = expected_steps(evaluators)
    report = Report()
    groups: dict[str, CaseRecord] = {}
    for label, tree, traj in _traces(args.paths, args.dialect):
        results = grade(traj, evaluators)
        calls = [redactor.describe(c) for c in traj.tool_calls]
        trace = trace_view(traj, redactor) if args.format == "html" else None
        case = CaseRecord.from_results(
            label, results, tool_calls=calls, not_evaluated=args.not_evaluated, trace=trace, expected=expected,
            informational=informational_names(evaluators, results),
        )  # fmt: skip
        scrub_case(case, redactor)
        if args.format == "table":
            print_case(console, case, traj, verbose=args.verbose, redactor=redactor)
        if args.case_attribute:  # repeated runs of one case: traces that share the attribute's value
            key = _case_id(tree, args.case_attribute)
            if key is not None:
                group = groups.get(key)
                if group is None:
                    cid = f"{args.case_attribute}={key}"
                    group = groups[key] = CaseRecord(
                        cid, True, [], args.threshold, args.not_evaluated, expected=expected
                    )
                    report.cases.append(group)
                case.runs[0].label = label
                group.add_run(case.runs[0])
                continue
        report.cases.append(case)  # not the tree (html keeps a clipped view of the spans per run)
    if not report.cases:
        raise _BadInput(f"no traces found in {', '.join(args.paths)}")
    if args.format == "table":
        print_summary(console, report)
    elif args.output is not None:
        Path(args.output).write_text(write(report, args.format), encoding="utf-8")
        print(f"{report.summary} → {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(write(report, args.format))
    return report.exit_code


def _tool_labels(traj: Trajectory) -> Callable[[SpanNode], str]:
    """`  tool=NAME args={...}` for the spans the dialect read as tool calls (any convention)."""
    listed = traj.listed(traj.calls(include_failed=True, include_deferred=True))
    calls = {id(c.span): c for c in listed if c.span is not None}

    def label(node: SpanNode) -> str:
        call = calls.get(id(node))
        if call is None:
            return ""
        args = clip(json.dumps(call.args, separators=(",", ":"), default=repr)) if call.args_recorded else "<not recorded>"
        return f"  tool={call.label} args={args}"

    return label


def _explanations(tree: SpanTree, dialect: str | None) -> Callable[[SpanNode], str]:
    """`  <- what the span was read as` for `show --explain`."""
    from .dialects import extract

    explain: dict[int, str] = {}
    extract(tree, dialect=dialect, explain=explain)
    return lambda node: f"  <- {explain.get(id(node), 'not read')}"


def _show(args: argparse.Namespace, console: Console) -> int:
    from .ingest._traces import recording_id

    shown = 0
    for label, tree, traj in _traces(args.paths, args.dialect):
        shown += 1
        print_heading(console, Text(printable(clip(label))))
        labels = _explanations(tree, args.dialect) if args.explain else _tool_labels(traj)
        labels = _turn_labels(tree, labels) if recording_id(tree) is not None else labels
        console.print(Text(tree.render(attributes=labels)))
        console.print("trajectory:")
        for line in trajectory_lines(traj):
            console.print(line, highlight=False)
        if args.explain:
            by_reason: dict[str, list[str]] = {}  # one line per reason (a trace with no step: one for both)
            for what, reason in sorted(traj.missing.items()):
                by_reason.setdefault(reason, []).append(what.replace("_", " "))
            for reason, whats in by_reason.items():
                console.print(Text(printable(f"  not recorded ({', '.join(whats)}): {reason}"), style="yellow"))
            for note in traj.incomplete:
                console.print(Text(printable(f"  incomplete: {note}"), style="yellow"))
    if not shown:
        raise _BadInput(f"no traces found in {', '.join(args.paths)}")
    return 0


class _BadInput(Exception):
    pass


_PLUGGED: dict[str, tuple[str, str]] = {
    # name: (module with `add_arguments(parser)` and `run(args, console) -> int`, help)
    "batch": (
        "tracegrade.batch._cli",
        "grade traces at fleet scale (files, Parquet, Delta; local or Spark) into a results table",
    ),
    "serve": ("tracegrade.receiver._cli", "receive OTLP/HTTP, grade each trace as it completes against a YAML spec"),
}
"""Subcommands that live in their own module (imported when the parser is built; keep their imports light)."""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__
    from .dialects import DIALECTS

    dialects = [d.name for d in DIALECTS]
    dialect_help = "force one span convention instead of auto-detecting (choices: " + ", ".join(dialects) + ")"
    parser = argparse.ArgumentParser(prog="tracegrade", description="Grade AI agents from their OpenTelemetry traces.")
    parser.add_argument("--version", action="version", version=f"tracegrade {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="record, grade and report a bundled deterministic agent (no network)")
    g = sub.add_parser("grade", help="grade recorded traces against a YAML spec; exit 1 if any trace fails")
    g.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace files or directories (OTLP/JSON, JSONL, .pb, Jaeger)"
    )
    g.add_argument("--spec", required=True, help="YAML file with a top-level `evaluators:` list")
    g.add_argument("--format", choices=["table", "json", "junit", "markdown", "html"], default="table",
                   help="report format (default: table, printed; the others go to stdout or -o FILE)")  # fmt: skip
    g.add_argument("-o", "--output", metavar="FILE", default=None, help="write the report to FILE (not with table)")
    g.add_argument("--not-evaluated", choices=["fail", "skip"], default="fail",
                   help="how a check that could not run (missing data) counts (default: fail; skip leaves it out, "
                   "and a trace where no check could run is reported as 'no checks', neither passed nor failed)")  # fmt: skip
    g.add_argument("--dialect", default=None, choices=dialects, metavar="DIALECT", help=dialect_help)
    g.add_argument("--redact", action="append", default=[], metavar="KEY_GLOB",
                   help="hide argument and attribute values under keys matching KEY_GLOB in every report format "
                   "(repeatable; grading sees the real values)")  # fmt: skip
    g.add_argument("--case-attribute", metavar="KEY", default=None,
                   help="traces whose spans carry the same value of attribute KEY are repeated runs of one case "
                   "(pass@k, pass^k, per-check pass rates and flaky checks are reported)")  # fmt: skip
    g.add_argument("--threshold", type=_fraction, default=1.0,
                   help="with --case-attribute: the share of a case's runs that must pass (default 1)")  # fmt: skip
    g.add_argument("--informational", action="append", default=[], metavar="EVALUATOR",
                   help="report the results (and statistics) of the spec's evaluator of this name without letting "
                   "them fail (repeatable; a name no evaluator has is an error)")  # fmt: skip
    g.add_argument("-v", "--verbose", action="store_true", help="table format: detail passing traces too")
    s = sub.add_parser("show", help="render each trace as a tree, with its extracted trajectory")
    s.add_argument("paths", nargs="+", metavar="PATH", help="trace files or directories (and their logs files)")
    s.add_argument("--dialect", default=None, choices=dialects, metavar="DIALECT", help=dialect_help)
    s.add_argument("--explain", action="store_true",
                   help="say what each span was read as, by which dialect, what was ignored and what is not recorded")  # fmt: skip
    for name, (module, help_text) in _PLUGGED.items():
        importlib.import_module(module).add_arguments(sub.add_parser(name, help=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(highlight=False)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning(args.command)
        return _run(args, console)


def _show_warning(command: str) -> Callable[..., None]:
    """Warnings print as `tracegrade <command>: warning: <message>`, without the source line that raised them."""

    def show(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
        print(f"tracegrade {command}: warning: {message}", file=sys.stderr)

    return show


def _run(args: argparse.Namespace, console: Console) -> int:
    if args.command == "demo":
        return _demo(console)
    if args.command in _PLUGGED:
        return int(importlib.import_module(_PLUGGED[args.command][0]).run(args, console))
    from .errors import SpecError, TraceFormatError

    try:
        return _grade(args, console) if args.command == "grade" else _show(args, console)
    except (TraceFormatError, SpecError, _BadInput, OSError, ValueError) as e:
        print(f"tracegrade {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
