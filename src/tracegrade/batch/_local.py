"""The local engine: tasks run in this process (one worker) or in a process pool, results taken in
task order (so the output does not depend on the number of workers)."""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from ._core import GradingPlan, Row
from ._plan import Task, iter_task, run_task

__all__ = ["default_workers", "run_local"]

_PLAN: GradingPlan | None = None


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _init(plan: GradingPlan) -> None:
    global _PLAN
    _PLAN = plan


def _run(task: Task) -> list[list[Row]]:
    assert _PLAN is not None
    return run_task(task, _PLAN)


def _context() -> Any:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    # workers fork with every module a task needs imported (not each importing them again)
    ctx.set_forkserver_preload(["tracegrade.batch._plan", "tracegrade.dialects", "tracegrade.ingest"])
    return ctx


def start_pool() -> None:
    """Start the workers' fork server now: it imports what a task needs while this process goes on
    (reading the spec); otherwise the first task waits for it."""
    if _context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def run_local(
    tasks: Iterable[Task], plan: GradingPlan, workers: int, done: Callable[[Task, int], None] | None = None
) -> Iterator[list[Row]]:
    """The rows of every unit, task by task in order. `done(task, units)` is called after each task."""
    if workers <= 1:
        for task in tasks:
            n = 0
            for rows in iter_task(task, plan):
                n += 1
                yield rows
            if done is not None:
                done(task, n)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_init, initargs=(plan,)) as pool:
        ahead: deque[tuple[Task, Future[list[list[Row]]]]] = deque()
        it = iter(tasks)
        for task in it:
            ahead.append((task, pool.submit(_run, task)))
            if len(ahead) >= 2 * workers:
                break
        while ahead:
            task, future = ahead.popleft()
            units = future.result()
            for nxt in it:  # keep the pool busy: one new task for each one taken
                ahead.append((nxt, pool.submit(_run, nxt)))
                break
            yield from units
            if done is not None:
                done(task, len(units))
