"""Record and replay: `pytest --tracegrade-record` saves every eval run's spans as an OTLP/JSON file
under `fixtures/traces/`, and `recorded_trace(name)` loads one back as a `SpanTree` to grade.

File names are stable, derived from the test's node id: `tests/test_support.py::test_refund[gpt]`
run 2 → `tests/test_support/test_refund[gpt]-run2.json` (a class adds `TestX.`). An id whose name
would be unsafe, too long for the file system, or the same as another id's (`t[a::b]`, `t[a.b]`)
gets a short hash of the node id instead (`fixture_stem`): one file per test and run, always.
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
_HASHED = re.compile(r"-[0-9a-f]{8}")  # how a hashed stem ends; a readable stem never does
_NAME_BYTES = 200  # a stem's last part; `-run<k>.json` follows within the file system's 255 bytes
_DIR_BYTES = 255
_DIRS_BYTES = 1024


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part).strip(".") or "_"


def _cut(part: str, limit: int) -> str:
    """`part` cut to at most `limit` bytes of UTF-8, at a character boundary."""
    return part.encode()[:limit].decode("utf-8", "ignore").rstrip(".") or "_"


def _readable(nodeid: str) -> list[str]:
    file, sep, rest = nodeid.partition("::")
    return [*file.removesuffix(".py").split("/"), rest.replace("::", ".") if sep else "test"]


def _node_of(parts: list[str]) -> str:
    """The one node id whose readable stem is `parts` (the inverse of `_readable` where it is kept)."""
    *dirs, name = parts
    head, bracket, params = name.partition("[")
    file = "/".join(dirs) + ("" if "." in dirs[-1] else ".py")
    return f"{file}::{head.replace('.', '::')}{bracket}{params}"


def fixture_stem(nodeid: str) -> str:
    """The file stem (relative path, no `-runN.json`) of a test's recordings.

    The readable form (`tests/test_a.py::TestX::test_b[1]` → `tests/test_a/TestX.test_b[1]`) is kept
    when it is safe as a file name, short enough, and names no other node id (`t[a::b]` and `t[a.b]`
    both read `t[a.b]`); otherwise unsafe characters become `_`, parts are cut to the file system's
    limits and `-` and 8 hex digits of the node id's SHA-1 follow, so distinct ids get distinct stems.
    """
    parts = _readable(nodeid)
    if (
        _node_of(parts) == nodeid
        and all(p == _safe(p) for p in parts)
        and not _HASHED.fullmatch(parts[-1][-9:])
        and len(parts[-1].encode()) <= _NAME_BYTES
        and all(len(p.encode()) <= _DIR_BYTES for p in parts[:-1])
        and len("/".join(parts[:-1]).encode()) <= _DIRS_BYTES
    ):
        return "/".join(parts)
    dirs: list[str] = []
    for part in parts[:-1]:
        if part in ("", ".", ".."):
            continue
        safe = _cut(_safe(part), _DIR_BYTES)
        if sum(len(d.encode()) + 1 for d in dirs) + len(safe.encode()) > _DIRS_BYTES:
            break
        dirs.append(safe)
    name = _cut(_safe(parts[-1]), _NAME_BYTES - 9)
    return "/".join([*dirs, f"{name}-{hashlib.sha1(nodeid.encode()).hexdigest()[:8]}"])


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
