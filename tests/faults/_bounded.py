"""Bounds for fault tests: a child process limited in time and memory (`run_bounded`), and a time
limit for a block in this process (`time_limit`).

Run a piece of Python in a child process bounded in time and memory, and report what it used.

A fault test that could hang or blow up memory runs its attack here: the child is killed at the
time limit (the test fails naming the hang) and capped in address space, and its peak RSS is read
back so a test can assert a memory bound.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

_MARK = "@@tracegrade-peak-rss-kb="


@dataclass(frozen=True)
class ChildResult:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mb: float


def run_bounded(code: str, *, timeout: float = 60.0, max_memory_mb: int = 2048) -> ChildResult:
    """Run `code` (dedented) in a fresh interpreter; fail the calling test if it outlives `timeout`.

    The child's address space is capped at `max_memory_mb` (a MemoryError past it, not a machine
    in swap); `peak_rss_mb` is the child's own maximum resident set size.
    """
    body = textwrap.dedent(code)
    wrapped = (
        body
        + "\nimport sys as _s\n"  # VmHWM: ru_maxrss would start at the parent's size (fork before exec)
        + "_hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        + f"_s.stdout.write('\\n{_MARK}' + _hwm + '\\n')\n"
    )
    limit = max_memory_mb * 1024 * 1024

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    try:
        proc = subprocess.run(
            [sys.executable, "-c", wrapped],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=cap,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"child did not finish within {timeout} s (a hang); stderr:\n{e.stderr!r}") from None
    peak = 0.0
    out_lines = []
    for line in proc.stdout.splitlines():
        if line.startswith(_MARK):
            peak = int(line[len(_MARK) :]) / 1024
        else:
            out_lines.append(line)
    return ChildResult(proc.returncode, "\n".join(out_lines), proc.stderr, peak)


@contextmanager
def time_limit(seconds: float, what: str = "the block") -> Iterator[None]:
    """Fail the test (AssertionError) instead of hanging when the block runs longer than `seconds`
    (SIGALRM: main thread only)."""

    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"{what} did not finish within {seconds} s (a hang)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
