"""Record and replay: `pytest --tracegrade-record` saves every eval run's spans as an OTLP/JSON file
(its log records beside it, `.logs.json`) under `fixtures/traces/`, and `recorded_trace(name)` loads
one back as a `SpanTree` to grade; `load_traces` and `tracegrade grade` read a recording as one unit too.

File names are stable, derived from the test's node id: `tests/test_support.py::test_refund[gpt]`
run 2 → `tests/test_support/test_refund[gpt]-run2.json` (a class adds `TestX.`; a YAML transcript
`tests/evals/refund.yaml::refund` → `tests/evals/refund/refund-run1.json`). An id whose name
would be unsafe, too long for the file system, or the same as another id's (`t[a::b]`, `t[a.b]`)
gets a short hash of the node id instead (`fixture_stem`): one file per test and run, always.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._hints import closest
from ..tree import SpanTree

if TYPE_CHECKING:
    from ..capture import Capture

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


_YAML_SUFFIXES = (".yaml", ".yml")
_TEST_SUFFIXES = (".py", *_YAML_SUFFIXES)


def _file_suffix(file: str, root: Path) -> str:
    """The suffix a readable stem drops from a test file's path: `.py`; a transcript's `.yaml` /
    `.yml` unless a test file of the same name with another of these suffixes sits beside it (then
    both would read the same, and the transcript keeps its suffix); `` for any other file."""
    if file.endswith(".py"):
        return ".py"
    suffix = next((x for x in _YAML_SUFFIXES if file.endswith(x)), "")
    base = file[: len(file) - len(suffix)]
    if suffix and base and not any((root / (base + other)).exists() for other in _TEST_SUFFIXES if other != suffix):
        return suffix
    return ""


def _readable(nodeid: str, suffix: str) -> list[str]:
    file, sep, rest = nodeid.partition("::")
    return [*file.removesuffix(suffix).split("/"), rest.replace("::", ".") if sep else "test"]


def _node_of(parts: list[str], suffix: str) -> str:
    """The one node id whose readable stem is `parts` (the inverse of `_readable` where it is kept)."""
    *dirs, name = parts
    head, bracket, params = name.partition("[")
    file = "/".join(dirs) + (suffix if suffix != ".py" or "." not in dirs[-1] else "")  # `x.json::t` reads `x.json/t`
    return f"{file}::{head.replace('.', '::')}{bracket}{params}"


def fixture_stem(nodeid: str, root: str | os.PathLike[str] | None = None) -> str:
    """The file stem (relative path, no `-runN.json`) of a test's recordings.

    The readable form drops the test file's `.py` (`tests/test_a.py::TestX::test_b[1]` →
    `tests/test_a/TestX.test_b[1]`) or a YAML transcript's `.yaml` / `.yml` (`tests/evals/refund.yaml::refund`
    → `tests/evals/refund/refund`; kept when a `refund.py` beside it, under `root`, the directory node
    ids are relative to (default: the working directory), would read the same). It is kept when it
    is safe as a file name, short enough, and names no other node id (`t[a::b]` and `t[a.b]` both read
    `t[a.b]`); otherwise unsafe characters become `_`, parts are cut to the file system's limits and
    `-` and 8 hex digits of the node id's SHA-1 follow, so distinct ids get distinct stems.
    """
    suffix = _file_suffix(nodeid.partition("::")[0], Path.cwd() if root is None else Path(root))
    parts = _readable(nodeid, suffix)
    if (
        _node_of(parts, suffix or ".py") == nodeid
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
    from 1 across all its `agent_eval.run(...)` calls; a test's older recordings are removed first.

    Each turn of a run is its own trace; every resource in the file carries `tracegrade.recording.id`
    = `<stem>-run<k>` (`RECORDING_ID`), so every reader (`load_traces`, `tracegrade grade`, batch)
    grades the run as one unit, as `recorded_trace` does. A capture's log records (`Capture.logs`)
    go to `<stem>-run<k>.logs.json` beside it, read back with it.
    """

    def __init__(self, directory: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory)
        self.root = root
        """The directory node ids are relative to (pytest's rootdir), for `fixture_stem`."""
        self._counts: dict[str, int] = {}
        self.written: list[Path] = []

    def save(self, nodeid: str, source: Capture | Iterable[Any]) -> Path:
        """Write one run (a `Capture`, with its log records, or its spans) as the test's next recording."""
        from ..ingest._traces import RECORDING_ID  # the readers and writers load only when recording
        from ..ingest._write import write_otlp_json

        stem = fixture_stem(nodeid, self.root)
        k = self._counts[stem] = self._counts.get(stem, 0) + 1
        target = self.directory / f"{stem}-run{k}.json"
        if k == 1 and target.parent.is_dir():
            base = target.name.removesuffix("-run1.json")
            stale = re.compile(re.escape(base) + r"-run\d+(\.logs)?\.json")
            for old in target.parent.iterdir():
                if stale.fullmatch(old.name):
                    old.unlink()
        write_otlp_json(source, target, indent=1, resource_attributes={RECORDING_ID: f"{stem}-run{k}"})
        self.written.append(target)
        return target


def recorded_trace(
    name: str,
    *,
    run: int = 1,
    directory: str | os.PathLike[str] = DEFAULT_RECORD_DIR,
    root: str | os.PathLike[str] | None = None,
) -> SpanTree:
    """The spans of one recorded run as one `SpanTree` (every turn of the run; grade it with `grade`),
    with the log records of its `.logs.json` file attached when there is one.

    `name` is a file under `directory` (`tests/test_support/test_refund-run1`, `.json` optional),
    or a test's node id (`tests/test_support.py::test_refund`, or a YAML transcript's
    `tests/evals/refund.yaml::refund`) with `run` choosing its run (from 1); `root` is the directory
    node ids are relative to (see `fixture_stem`). A missing recording raises `FileNotFoundError`
    naming the closest recordings there are.
    """
    if isinstance(run, bool) or not isinstance(run, int) or run < 1:
        raise ValueError(f"run must be an integer >= 1, got {run!r}")
    base = Path(directory)
    if "::" in name:
        rel = f"{fixture_stem(name, root)}-run{run}.json"
    else:
        rel = name if name.endswith((".json", ".json.gz")) else name + ".json"
    path = base / rel
    if not path.is_file():
        known = (
            sorted(str(p.relative_to(base)) for p in base.rglob("*.json") if not p.name.endswith(".logs.json"))
            if base.is_dir()
            else []
        )
        close = closest(rel, known, n=3)
        hint = " (record them with `pytest --tracegrade-record`)"
        if close:
            hint = f"; closest: {', '.join(close)}"
        elif known:
            hint = f" ({len(known)} other recordings there)"
        raise FileNotFoundError(f"no recorded trace {rel!r} in {base}{hint}")
    from ..ingest import read_logs, read_spans
    from ..ingest._write import logs_path_for

    tree = SpanTree.from_spans(list(read_spans(path)))
    logs = logs_path_for(path)
    if logs.is_file():
        tree.attach_logs(read_logs(logs))
    return tree
