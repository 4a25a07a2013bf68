"""`tracegrade` command line: `demo`, `grade TRACES --spec FILE`, `show TRACE`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from .models import EvalResult
from .trajectory import Trajectory

__all__ = ["main"]

_STYLE = {"passed": "green", "failed": "red", "not_evaluated": "yellow", "error": "magenta"}


def results_table(results: Sequence[EvalResult], title: str = "") -> Table:
    table = Table(title=title or None, title_justify="left", show_lines=False)
    table.add_column("evaluator", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("reason")
    for r in results:
        style = _STYLE[r.outcome]
        score = "" if r.score is None else f"{r.score:.3f}"
        table.add_row(r.name, f"[{style}]{r.outcome}[/{style}]", score, r.reasoning)
    return table


def trajectory_lines(traj: Trajectory) -> list[str]:
    lines = []
    for i, call in enumerate(traj.calls(include_failed=True, include_deferred=True), 1):
        flag = " [red](failed: retry requested)[/red]" if call.retry_cause else " [red](failed)[/red]" if call.failed else ""
        if call.deferred:
            flag = f" [yellow](deferred: {call.deferred})[/yellow]"
        agent = f" [dim]{call.agent}[/dim]" if call.agent else ""
        lines.append(f"  {i}. {call.describe()}{flag}{agent}")
    tokens = sum(r.total_tokens or 0 for r in traj.model_requests)
    lines.append(f"  model requests: {len(traj.model_requests)}, tokens: {tokens}")
    return lines


def _demo(console: Console) -> int:
    from .demo import run_demo

    counts = dict.fromkeys(_STYLE, 0)
    for case, _cap, reply, results in run_demo():
        console.rule(f"[bold]{case.name}[/bold]: {case.prompt!r}")
        console.print("trajectory (from spans):")
        for line in trajectory_lines(_cap.trajectory):
            console.print(line, highlight=False)
        console.print(f"reply: {reply!r}", highlight=False)
        console.print(results_table(results))
        for r in results:
            counts[r.outcome] += 1
    summary = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n)
    console.print(f"\n[bold]demo:[/bold] {summary} (one check is meant to fail, to show a failure's reason)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tracegrade", description="Grade AI agents from their OpenTelemetry traces.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="record, grade and report a bundled deterministic agent (no network)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(highlight=False)
    if args.command == "demo":
        return _demo(console)
    raise AssertionError(args.command)  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
