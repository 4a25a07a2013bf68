"""Record and replay: `pytest --tracegrade-record` saves every eval run's spans as an OTLP/JSON file
under `fixtures/traces/`, and `recorded_trace(name)` loads one back as a `SpanTree` to grade.

File names are stable, derived from the test's node id: `tests/test_support.py::test_refund[gpt]`
run 2 → `tests/test_support/test_refund[gpt]-run2.json` (a class adds `TestX.`; characters that
are not safe in a file name become `_`, and then a short hash of the node id keeps names apart).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..tree import SpanTree

__all__ = ["DEFAULT_RECORD_DIR", "TraceRecorder", "fixture_stem", "recorded_trace"]

DEFAULT_RECORD_DIR = "fixtures/traces"
_UNSAFE = re.compile(r"[^\w.\-\[\]=+,]")


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part).strip(".") or "_"


def fixture_stem(nodeid: str) -> str:
    """The file stem (relative path, no `-runN.json`) of a test's recordings."""
    file, _, rest = nodeid.partition("::")
    raw = [*Path(file.removesuffix(".py")).parts, rest.replace("::", ".")]
    safe = [_safe(p) for p in raw[:-1] if p not in ("", ".", "..")] + [_safe(raw[-1]) if rest else "test"]
    stem = "/".join(safe)
    if safe != raw:  # characters were replaced: keep names of different tests apart
        stem += "-" + hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    return stem


class TraceRecorder:
    """Writes each run of a test to `<directory>/<stem>-run<k>.json`, k counting the test's runs
    from 1 across all its `agent_eval.run(...)` calls; a test's older recordings are removed first."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._counts: dict[str, int] = {}
        self.written: list[Path] = []

    def save(self, nodeid: str, spans: Iterable[Any]) -> Path:
        from ..ingest import write_otlp_json  # the readers and writers load only when recording

        stem = fixture_stem(nodeid)
        k = self._counts[stem] = self._counts.get(stem, 0) + 1
        target = self.directory / f"{stem}-run{k}.json"
        if k == 1 and target.parent.is_dir():
            base = target.name.removesuffix("-run1.json")
            stale = re.compile(re.escape(base) + r"-run\d+\.json")
            for old in target.parent.iterdir():
                if stale.fullmatch(old.name):
                    old.unlink()
        write_otlp_json(spans, target, indent=1)
        self.written.append(target)
        return target


def recorded_trace(name: str, *, run: int = 1, directory: str | os.PathLike[str] = DEFAULT_RECORD_DIR) -> SpanTree:
    """The spans of one recorded run as one `SpanTree` (every turn of the run; grade it with `grade`).

    `name` is a file under `directory` (`tests/test_support/test_refund-run1`, `.json` optional),
    or a test's node id (`tests/test_support.py::test_refund`) with `run` choosing its run (from 1).
    A missing recording raises `FileNotFoundError` naming the closest recordings there are.
    """
    if isinstance(run, bool) or not isinstance(run, int) or run < 1:
        raise ValueError(f"run must be an integer >= 1, got {run!r}")
    root = Path(directory)
    if "::" in name:
        rel = f"{fixture_stem(name)}-run{run}.json"
    else:
        rel = name if name.endswith((".json", ".json.gz")) else name + ".json"
    path = root / rel
    if not path.is_file():
        known = sorted(str(p.relative_to(root)) for p in root.rglob("*.json")) if root.is_dir() else []
        close = difflib.get_close_matches(rel, known, n=3, cutoff=0.5)
        hint = " (record them with `pytest --tracegrade-record`)"
        if close:
            hint = f"; closest: {', '.join(close)}"
        elif known:
            hint = f" ({len(known)} other recordings there)"
        raise FileNotFoundError(f"no recorded trace {rel!r} in {root}{hint}")
    from ..ingest import read_spans

    return SpanTree.from_spans(list(read_spans(path)))
