"""`tracegrade` command line: `demo`, `grade TRACES --spec FILE`, `show TRACE`."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .results import EvalResult
from .trajectory import Trajectory
from .tree import SpanNode, SpanTree

__all__ = ["main"]

_STYLE = {"passed": "green", "failed": "red", "not_evaluated": "yellow", "error": "magenta"}


def results_table(results: Sequence[EvalResult], title: str = "") -> Table:
    table = Table(title=title or None, title_justify="left", show_lines=False)
    table.add_column("evaluator", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("reason")
    for r in results:
        score = "" if r.score is None else f"{r.score:.3f}"
        table.add_row(Text(r.name), Text(r.outcome, style=_STYLE[r.outcome]), score, Text(r.reasoning))
    return table


def trajectory_lines(traj: Trajectory) -> list[Text]:
    """One line per tool call (failed and deferred ones flagged) and a model-request line; recorded
    text (names, arguments, agents) is never read as markup."""
    lines = []
    for i, call in enumerate(traj.calls(include_failed=True, include_deferred=True), 1):
        line = Text(f"  {i}. {call.describe()}")
        if call.failed:
            line.append(" (failed: retry requested)" if call.retry_cause else " (failed)", style="red")
        if call.deferred:
            line.append(f" (deferred: {call.deferred})", style="yellow")
        if call.agent:
            line.append(f" {call.agent}", style="dim")
        lines.append(line)
    tokens = sum(r.total_tokens or 0 for r in traj.model_requests)
    lines.append(Text(f"  model requests: {len(traj.model_requests)}, tokens: {tokens}"))
    return lines


def _demo(console: Console) -> int:
    from .demo import run_demo

    counts = dict.fromkeys(_STYLE, 0)
    for case, _cap, reply, results in run_demo():
        ok = all(r.passed for r in results)
        verdict = ("PASS", "green") if ok else ("FAIL", "red")
        console.rule(Text.assemble(verdict, " ", (case.name, "bold"), f": {case.prompt!r}"))
        console.print("trajectory (from spans):")
        for line in trajectory_lines(_cap.trajectory):
            console.print(line, highlight=False)
        console.print(Text(f"reply: {reply!r}"))
        console.print(results_table(results))
        for r in results:
            counts[r.outcome] += 1
    summary = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n)
    console.print(f"\n[bold]demo:[/bold] {summary} (one check is meant to fail, to show a failure's reason)")
    return 0


def _traces(paths: Sequence[str], dialect: str | None) -> Iterator[tuple[str, SpanTree, Trajectory]]:
    """(label, tree, trajectory) of every trace, file by file, streaming (one trace in memory at a time)."""
    from .ingest import iter_traces, trace_files
    from .ingest._logs import is_logs_file

    files = trace_files(list(paths))
    logs = [f for f in files if is_logs_file(f)]  # attached to the traces of every trace file
    for path in files:
        if path in logs:
            continue
        for tree in iter_traces([path, *logs] if logs else path):
            root = tree.roots[0] if tree.roots else None
            label = f"{path}: {root.trace_id:032x} {root.name!r}" if root is not None else f"{path}: (empty)"
            yield label, tree, Trajectory.from_tree(tree, dialect=dialect)


_Graded = tuple[str, list[str], list[EvalResult]]
"""(trace label, its tool calls described, the results)."""


def _summary(graded: Sequence[_Graded], failed: int, not_evaluated: str) -> str:
    counts = dict.fromkeys(_STYLE, 0)
    for _label, _calls, results in graded:
        for r in results:
            counts[r.outcome] += 1
    skipped = " (skipped)" if not_evaluated == "skip" and counts["not_evaluated"] else ""
    return (
        f"{len(graded)} trace(s): {len(graded) - failed} passed, {failed} failed; checks: {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['not_evaluated']} not evaluated{skipped}, {counts['error']} errors"
    )


def _grade(args: argparse.Namespace, console: Console) -> int:
    from .grading import grade
    from .spec import load_spec

    evaluators = load_spec(args.spec)
    graded: list[_Graded] = []
    failed: set[str] = set()
    for label, _tree, traj in _traces(args.paths, args.dialect):
        results = grade(traj, evaluators)
        ok = all(r.counts_as_passed(args.not_evaluated) for r in results)
        if not ok:
            failed.add(label)
        if args.format == "table":
            if ok and not args.verbose:
                console.print(Text.assemble(("PASS", "green"), f" {label} ({len(results)} checks)"), soft_wrap=True)
            else:
                console.rule(Text(f"{'PASS' if ok else 'FAIL'} {label}"))
                for line in trajectory_lines(traj):
                    console.print(line, highlight=False)
                console.print(results_table(results))
        graded.append((label, [c.describe() for c in traj.tool_calls], results))  # not the tree: memory stays flat
    if not graded:
        raise _BadInput(f"no traces found in {', '.join(args.paths)}")
    summary = _summary(graded, len(failed), args.not_evaluated)
    if args.format == "json":
        doc = [{"trace": label, "passed": label not in failed, "tool_calls": calls,
                "results": [_result_dict(r) for r in results]} for label, calls, results in graded]  # fmt: skip
        print(json.dumps(doc, indent=2))
    elif args.format == "junit":
        print(_junit(graded, args.not_evaluated))
    elif args.format == "markdown":
        print(_markdown(graded, failed, summary))
    else:
        console.print(f"[bold]{summary}[/bold]", soft_wrap=True)
    return 1 if failed else 0


def _result_dict(r: EvalResult) -> dict[str, object]:
    return {"evaluator": r.name, "outcome": r.outcome, "passed": r.passed, "score": r.score, "reason": r.reasoning}


def _junit(graded: Sequence[_Graded], not_evaluated: str) -> str:
    from xml.sax.saxutils import escape, quoteattr

    cases, failures, skipped = [], 0, 0
    for label, _calls, results in graded:
        for r in results:
            body = ""
            if r.outcome == "not_evaluated" and not_evaluated == "skip":
                skipped += 1
                body = f"<skipped message={quoteattr(r.reasoning)}/>"
            elif r.outcome == "error":
                failures += 1
                body = f"<error message={quoteattr(r.reasoning)}>{escape(r.reasoning)}</error>"
            elif not r.passed:
                failures += 1
                body = f"<failure message={quoteattr(r.reasoning)}>{escape(r.reasoning)}</failure>"
            cases.append(f"  <testcase classname={quoteattr(label)} name={quoteattr(r.name)}>{body}</testcase>")
    head = f'<testsuite name="tracegrade" tests="{len(cases)}" failures="{failures}" skipped="{skipped}">'
    return "\n".join(['<?xml version="1.0" encoding="utf-8"?>', head, *cases, "</testsuite>"])


def _markdown(graded: Sequence[_Graded], failed: set[str], summary: str) -> str:
    lines = [f"# tracegrade: {len(graded) - len(failed)} of {len(graded)} trace(s) passed", "", summary + ".", ""]
    for label, calls, results in graded:
        lines += [f"## {'PASS' if label not in failed else 'FAIL'} {label}", "",
                  "tool calls: " + (", ".join(f"`{c}`" for c in calls) or "(none)"), "",
                  "| evaluator | outcome | score | reason |", "|---|---|---|---|"]  # fmt: skip
        for r in results:
            score = "" if r.score is None else f"{r.score:.3f}"
            reason = r.reasoning.replace("|", "\\|")
            lines.append(f"| {r.name} | {r.outcome} | {score} | {reason} |")
        lines.append("")
    return "\n".join(lines)


def _tool_labels(traj: Trajectory) -> Callable[[SpanNode], str]:
    """`  tool=NAME args={...}` for the spans the dialect read as tool calls (any convention)."""
    calls = {id(c.span): c for c in traj.calls(include_failed=True, include_deferred=True) if c.span is not None}

    def label(node: SpanNode) -> str:
        call = calls.get(id(node))
        if call is None:
            return ""
        args = json.dumps(call.args, separators=(",", ":"), default=repr) if call.args_recorded else "<not recorded>"
        return f"  tool={call.name} args={args}"

    return label


def _explanations(tree: SpanTree, dialect: str | None) -> Callable[[SpanNode], str]:
    """`  <- what the span was read as` for `show --explain`."""
    from .dialects import extract

    explain: dict[int, str] = {}
    extract(tree, dialect=dialect, explain=explain)
    return lambda node: f"  <- {explain.get(id(node), 'not read')}"


def _show(args: argparse.Namespace, console: Console) -> int:
    shown = 0
    for label, tree, traj in _traces(args.paths, args.dialect):
        shown += 1
        console.rule(Text(label))
        labels = _explanations(tree, args.dialect) if args.explain else _tool_labels(traj)
        console.print(Text(tree.render(attributes=labels)))
        console.print("trajectory:")
        for line in trajectory_lines(traj):
            console.print(line, highlight=False)
        if args.explain:
            for what, reason in sorted(traj.missing.items()):
                console.print(Text(f"  not recorded ({what.replace('_', ' ')}): {reason}", style="yellow"))
            for note in traj.incomplete:
                console.print(Text(f"  incomplete: {note}", style="yellow"))
    if not shown:
        raise _BadInput(f"no traces found in {', '.join(args.paths)}")
    return 0


class _BadInput(Exception):
    pass


_PLUGGED: dict[str, tuple[str, str]] = {
    # name: (module with `add_arguments(parser)` and `run(args, console) -> int`, help)
    "batch": ("tracegrade.batch._cli", "grade traces at fleet scale (files, Parquet, Delta; local or Spark) into a results table"),
    "serve": ("tracegrade.receiver._cli", "receive OTLP/HTTP, grade each trace as it completes against a YAML spec"),
}
"""Subcommands that live in their own module (imported when the parser is built; keep their imports light)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tracegrade", description="Grade AI agents from their OpenTelemetry traces.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="record, grade and report a bundled deterministic agent (no network)")
    g = sub.add_parser("grade", help="grade recorded traces against a YAML spec; exit 1 if any trace fails")
    g.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace files or directories (OTLP/JSON, JSONL, .pb, Jaeger)"
    )
    g.add_argument("--spec", required=True, help="YAML file with a top-level `evaluators:` list")
    g.add_argument("--format", choices=["table", "json", "junit", "markdown"], default="table")
    g.add_argument("--not-evaluated", choices=["fail", "skip"], default="fail",
                   help="how a check that could not run (missing data) counts (default: fail)")  # fmt: skip
    g.add_argument("--dialect", default=None, help="force one span convention instead of auto-detecting")
    g.add_argument("-v", "--verbose", action="store_true", help="table format: detail passing traces too")
    s = sub.add_parser("show", help="render each trace as a tree, with its extracted trajectory")
    s.add_argument("paths", nargs="+", metavar="PATH")
    s.add_argument("--dialect", default=None)
    s.add_argument("--explain", action="store_true",
                   help="say what each span was read as, by which dialect, what was ignored and what is not recorded")  # fmt: skip
    for name, (module, help_text) in _PLUGGED.items():
        importlib.import_module(module).add_arguments(sub.add_parser(name, help=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(highlight=False)
    if args.command == "demo":
        return _demo(console)
    if args.command in _PLUGGED:
        return int(importlib.import_module(_PLUGGED[args.command][0]).run(args, console))
    from .ingest import TraceFormatError
    from .spec import SpecError

    try:
        return _grade(args, console) if args.command == "grade" else _show(args, console)
    except (TraceFormatError, SpecError, _BadInput, OSError, ValueError) as e:
        print(f"tracegrade {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
