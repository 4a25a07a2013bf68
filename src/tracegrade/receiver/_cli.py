"""`tracegrade serve --spec SPEC.yaml`: receive OTLP, grade each trace as it completes, show a live
table and running pass rates, forward the original requests upstream and emit the verdicts as
`gen_ai.evaluation.result` log records. Ctrl-C (or SIGTERM) grades the traces still pending
(incomplete ones as such) and stops it with a summary.

Imports stay light at module level (the CLI parser imports this module); aiohttp and the graders
load in `run`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from ._serve import GradedTrace, OnlineGrader
    from ._server import OTLPReceiver

__all__ = ["add_arguments", "run"]


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1, got {text!r}")
    return value


def _url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"expected an http(s):// OTLP/HTTP base URL, got {text!r}")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spec", required=True, help="YAML file with a top-level `evaluators:` list")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=4318, help="port to bind; 0 picks a free one (default: 4318)")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow binding a non-loopback --host (accepts telemetry from other hosts)",
    )
    parser.add_argument(
        "--forward", type=_url, metavar="URL", help="upstream OTLP/HTTP base URL; requests go on unchanged"
    )
    parser.add_argument("--sample", type=_rate, default=1.0, metavar="RATE",
                        help="grade this fraction of traces, chosen by trace id (deterministic; default: 1)")  # fmt: skip
    parser.add_argument("--emit-results", type=_url, metavar="URL",
                        help="OTLP/HTTP base URL to send each verdict to as a gen_ai.evaluation.result log record")  # fmt: skip
    parser.add_argument("--settle", type=float, default=2.0, metavar="SECONDS",
                        help="grade a trace this long after its last span or log record arrived, once its root has (default: 2)")  # fmt: skip
    parser.add_argument("--give-up", type=float, default=30.0, metavar="SECONDS",
                        help="grade an incomplete trace (reported as such) after this long without data (default: 30)")  # fmt: skip
    parser.add_argument("--not-evaluated", choices=["fail", "skip"], default="fail",
                        help="how a check that could not run (missing data) counts for a trace (default: fail)")  # fmt: skip
    parser.add_argument("--dialect", default=None, help="force one span convention instead of auto-detecting")
    parser.add_argument("--ready-file", metavar="PATH", help="write {endpoint, pid} as JSON here once listening")


def _outcomes(graded: GradedTrace) -> RenderableType:
    from rich.text import Text

    from ..reporting.terminal import OUTCOME_STYLE

    text = Text()
    for r in graded.results:
        text.append(f"{r.name}=", style="dim")
        text.append(r.outcome, style=OUTCOME_STYLE[r.outcome])
        text.append(" ")
    return text


def _line(graded: GradedTrace) -> RenderableType:
    from rich.text import Text

    n_passed = sum(r.passed for r in graded.results)
    line = Text.assemble(
        ("PASS" if graded.passed else "FAIL", "green" if graded.passed else "red"),
        f" {graded.trace_id:032x} {graded.root_name!r}: {n_passed}/{len(graded.results)} checks passed",
    )
    if graded.incomplete:
        line.append(" (incomplete: " + "; ".join(graded.incomplete) + ")", style="yellow")
    return line


def _evaluator_table(grader: OnlineGrader) -> RenderableType:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="pass rate per evaluator", title_justify="left")
    for name in ("evaluator", "passed", "failed", "not evaluated", "errors", "pass rate"):
        table.add_column(name, justify="left" if name == "evaluator" else "right", no_wrap=True)
    for name, c in grader.per_evaluator.items():
        n = c.counts
        rate = f"{c.pass_rate:.1%}"
        table.add_row(Text(name), str(n["passed"]), str(n["failed"]), str(n["not_evaluated"]), str(n["error"]), rate)
    return table


def _live_view(grader: OnlineGrader, rx: OTLPReceiver) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    recent = Table(title="recent traces", title_justify="left")
    recent.add_column("trace", no_wrap=True)
    recent.add_column("run")
    recent.add_column("results")
    for g in reversed(grader.recent):
        run_name = Text(g.root_name) + (Text(" (incomplete)", style="yellow") if g.incomplete else Text())
        recent.add_row(Text(f"{g.trace_id:032x}"[:16]), run_name, _outcomes(g))
    return Group(recent, _evaluator_table(grader), Text(_status(grader, rx)))


def _status(grader: OnlineGrader, rx: OTLPReceiver) -> str:
    s = rx.stats
    parts = [
        f"{grader.graded} trace(s) graded: {grader.graded - grader.failed} passed, {grader.failed} failed"
        + (f" ({grader.incomplete} incomplete)" if grader.incomplete else ""),
        f"{grader.sampled_out} sampled out",
        f"{rx.pending_traces} pending",
        f"{s.spans_accepted} spans received",
    ]
    if grader.logs_without_spans:
        parts.append(f"{grader.logs_without_spans} log record(s) of traces with no spans, not graded")
    if s.refused_busy or s.refused_malformed or s.refused_too_large:
        parts.append(
            f"refused: {s.refused_busy} busy, {s.refused_malformed} malformed, {s.refused_too_large} too large"
        )
    if rx.forward:
        parts.append(f"{s.forwarded} request(s) forwarded, {s.forward_failures} failed")
    if grader.emit_url:
        parts.append(f"{grader.emitted} result(s) emitted, {grader.emit_failures} failed")
    return "; ".join(parts)


def _write_ready(path: str, endpoint: str) -> None:
    import json
    import os

    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"endpoint": endpoint, "pid": os.getpid()}, f)
    os.replace(tmp, path)


def run(args: argparse.Namespace, console: Console) -> int:
    import signal
    import threading

    from rich.live import Live
    from rich.text import Text

    from ..errors import SpecError
    from ..spec import load_spec
    from ._serve import OnlineGrader
    from ._server import OTLPReceiver

    try:
        evaluators = load_spec(args.spec)
        rx = OTLPReceiver(args.host, args.port, allow_remote=args.allow_remote, forward=args.forward)
        grader = OnlineGrader(
            evaluators, sample=args.sample, emit_results=args.emit_results, dialect=args.dialect,
            not_evaluated=args.not_evaluated,
        )  # fmt: skip
        rx.start()
    except (SpecError, ValueError, OSError) as e:
        console.print(Text(f"tracegrade serve: error: {e}", style="red"), soft_wrap=True)
        return 2
    wake = threading.Event()
    stopping = threading.Event()
    rx.on_data = wake.set

    def on_sigterm(_sig: int, _frame: object) -> None:
        stopping.set()
        wake.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_sigterm)
    console.print(
        Text(
            f"tracegrade serve: listening on {rx.endpoint} (OTLP/HTTP /v1/traces, /v1/logs); "
            f"{len(evaluators)} evaluator(s) from {args.spec}; Ctrl-C stops"
        ),  # fmt: skip
        soft_wrap=True,
    )
    if args.ready_file:
        _write_ready(args.ready_file, rx.endpoint)
    live = Live(_live_view(grader, rx), console=console, refresh_per_second=4) if console.is_terminal else None
    poll = max(min(args.settle / 2, 0.25), 0.02)
    interrupted = False
    try:
        if live is not None:
            live.start()
        while not stopping.is_set():
            wake.wait(poll)
            wake.clear()
            for trace in rx.take_settled(args.settle, args.give_up):
                graded = grader.process(trace)
                if graded is not None and live is None:
                    console.print(_line(graded), soft_wrap=True)
            if live is not None:
                live.update(_live_view(grader, rx))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        rx.stop()
        leftover = rx.take_remaining()  # whole ones not yet settled, and incomplete ones, graded as such
        for trace in leftover:
            graded = grader.process(trace)
            if graded is not None and live is None:
                console.print(_line(graded), soft_wrap=True)
        if live is not None:
            live.update(_live_view(grader, rx))
            live.stop()
    console.print(Text("interrupted: stopping" if interrupted else "stopping", style="dim"))
    console.print(_evaluator_table(grader))
    console.print(Text(f"tracegrade serve: {_status(grader, rx)}"), soft_wrap=True)
    return 0
