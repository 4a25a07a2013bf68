"""Batch output: the result writer (Parquet or JSON lines, by suffix), the running summary (pass
rates by evaluator and agent, not-evaluated counts, worst cohorts) and `BatchResult`."""

from __future__ import annotations

import io
import math
import os
import secrets
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson

from ..results import OUTCOMES, summary_text
from ._core import BatchInputError, Row

if TYPE_CHECKING:
    import pyarrow as pa
    from rich.table import Table

__all__ = ["BatchResult", "BatchSummary", "Cohort", "ResultWriter", "result_schema"]

OUTPUT_SUFFIXES = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
_REASONS_KEPT = 200


def result_schema(columns: Sequence[str]) -> pa.Schema:
    import pyarrow as pa

    types = {"score": pa.float64()}
    return pa.schema([(c, types.get(c, pa.string())) for c in columns])


def _utf8(value: Any) -> Any:
    """`value`, text made encodable as UTF-8 (lone surrogates as `\\udXXX` escapes)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def output_format(path: str | os.PathLike[str]) -> str:
    suffix = Path(path).suffix.lower()
    fmt = OUTPUT_SUFFIXES.get(suffix)
    if fmt is None:
        raise BatchInputError(f"--out {os.fspath(path)}: unknown suffix {suffix or '(none)'!r}; use .parquet or .jsonl")
    return fmt


class ResultWriter:
    """Streams rows to a Parquet file (row groups of `chunk` rows) or a JSON lines file; with no path,
    keeps them to build an in-memory table.

    The rows go to a temporary file beside `path` (`.NAME.XXXXXXXX.tmp`), moved onto `path` by `close`;
    `abort` (a failed job) removes it, so `path` only ever holds a finished job's results."""

    def __init__(self, path: str | os.PathLike[str] | None, columns: Sequence[str], chunk: int = 8_192) -> None:
        self.path = None if path is None else Path(path)
        self.temp: Path | None = None
        self.columns = tuple(columns)
        self.chunk = chunk
        self.format = "memory" if path is None else output_format(path)
        self.buffer: list[Row] = []
        self.batches: list[Any] = []
        self._pq: Any = None
        self._fh: Any = None
        if self.format == "parquet":
            from ._arrow import require_pyarrow

            require_pyarrow()
        if self.path is not None:
            self.temp, fd = _temp_beside(self.path)
            self._fh = os.fdopen(fd, "wb") if self.format == "jsonl" else None
            if self._fh is None:
                os.close(fd)  # pyarrow's ParquetWriter opens the file by its name

    def write(self, rows: Iterable[Row]) -> None:
        if self._fh is not None:
            self._fh.write(self._json_lines(list(rows)))
            return
        self.buffer.extend(rows)
        if len(self.buffer) >= self.chunk:
            self._flush()

    def _batch(self) -> Any:
        """The buffered rows as one record batch. Built by pyarrow's JSON reader from orjson's text of
        the rows: `pa.array` would import pandas (when it is installed) on first use, a fixed cost
        larger than writing a million rows; rows JSON cannot carry exactly (a non-finite or non-float
        score) take `pa.array`. Text that is not valid Unicode (a lone surrogate, which a trace's JSON
        escapes can hold) is written with the offending code points as `\\uXXXX` escapes."""
        try:
            return self._record_batch(self.buffer)
        except UnicodeEncodeError:  # a lone surrogate, on the `pa.array` path (`_json_lines` escapes its own)
            return self._record_batch([tuple(map(_utf8, r)) for r in self.buffer])

    def _json_lines(self, rows: list[Row]) -> bytes:
        """The rows as JSON lines, one object per row; a lone surrogate is written as its escape."""
        cols = self.columns
        try:
            return b"".join(orjson.dumps(dict(zip(cols, r, strict=True))) + b"\n" for r in rows)
        except orjson.JSONEncodeError:
            return b"".join(orjson.dumps(dict(zip(cols, map(_utf8, r), strict=True))) + b"\n" for r in rows)

    def _record_batch(self, rows: list[Row]) -> Any:
        import pyarrow as pa

        schema = result_schema(self.columns)
        score = self.columns.index("score")
        if rows and all(r[score] is None or (type(r[score]) is float and math.isfinite(r[score])) for r in rows):
            return self._json_batch(rows, schema)
        cols = list(zip(*rows, strict=True)) if rows else [()] * len(self.columns)
        return pa.record_batch([pa.array(c, f.type) for c, f in zip(cols, schema, strict=True)], schema=schema)

    def _json_batch(self, rows: list[Row], schema: pa.Schema) -> Any:
        import pyarrow.json as pa_json

        text = self._json_lines(rows)
        table = pa_json.read_json(
            io.BytesIO(text),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, len(text) + 1)),
            parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"),
        )
        return table.combine_chunks().to_batches()[0]

    def _flush(self) -> None:
        if not self.buffer and self.format != "parquet":
            return
        if self.format == "memory":
            self.batches.append(self._batch())
        else:
            import pyarrow.parquet as pq

            if self._pq is None:
                self._pq = pq.ParquetWriter(self.temp, result_schema(self.columns))
            if self.buffer:
                self._pq.write_batch(self._batch())
        self.buffer = []

    def close(self) -> pa.Table | None:
        """Finish the file and move it onto `path`; the in-memory table when there is no path."""
        if self.format == "memory":
            import pyarrow as pa

            self._flush()
            return pa.Table.from_batches(self.batches, schema=result_schema(self.columns))
        assert self.path is not None and self.temp is not None
        try:
            if self._fh is not None:
                self._fh.close()
            else:
                self._flush()
                self._pq.close()
            os.replace(self.temp, self.path)
        except BaseException:
            self.abort()
            raise
        return None

    def abort(self) -> None:
        """Stop without results: the temporary file is removed, `path` is left as it was."""
        try:
            if self._fh is not None:
                self._fh.close()
            if self._pq is not None:
                self._pq.close()
        finally:
            self._fh = self._pq = None
            self.buffer = []
            if self.temp is not None:
                self.temp.unlink(missing_ok=True)


def _temp_beside(path: Path) -> tuple[Path, int]:
    """A new file in `path`'s directory (created with the mode a new file gets there) and its descriptor."""
    while True:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


@dataclass(frozen=True, slots=True)
class Cohort:
    """Results of one evaluator on one agent."""

    evaluator: str
    agent: str | None
    counts: dict[str, int]
    top_reason: str = ""
    """The most frequent reason of its non-passing results (among the first distinct ones seen)."""

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def pass_rate(self) -> float:
        return self.counts.get("passed", 0) / self.total if self.total else 0.0


@dataclass
class BatchSummary:
    """Counts over every graded unit, kept while rows stream by (the rows themselves are not kept)."""

    not_evaluated: Literal["fail", "skip"] = "fail"
    units: int = 0
    units_failed: int = 0
    counts: dict[tuple[str, str | None], Counter[str]] = field(default_factory=dict)
    reasons: dict[tuple[str, str | None], Counter[str]] = field(default_factory=dict)
    case_attribute: str | None = None
    """With a case attribute (the rows' last column is `case_id`), units sharing a case id are
    repeated runs of one case: their (evaluator, outcome) pairs are kept for the statistics."""
    cases: dict[str, list[list[tuple[str, str]]]] = field(default_factory=dict)

    def add(self, rows: Sequence[Row]) -> None:
        """Count one unit's rows (one per evaluator)."""
        self.units += 1
        failed = False
        if self.case_attribute is not None and rows and rows[0][-1] is not None:
            self.cases.setdefault(str(rows[0][-1]), []).append([(str(r[3]), str(r[5])) for r in rows])
        counts = self.counts
        for r in rows:
            key = (r[3], r[2])
            outcome = r[5]
            counted = counts.get(key)
            if counted is None:
                counted = counts[key] = Counter()
            counted[outcome] += 1
            if outcome != "passed":
                if not (outcome == "not_evaluated" and self.not_evaluated == "skip"):
                    failed = True
                reasons = self.reasons.get(key)
                if reasons is None:
                    reasons = self.reasons[key] = Counter()
                if r[7] in reasons or len(reasons) < _REASONS_KEPT:
                    reasons[r[7]] += 1
        self.units_failed += failed

    @property
    def outcomes(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for c in self.counts.values():
            total.update(c)
        return total

    @property
    def passed(self) -> bool:
        return self.units_failed == 0

    def cohorts(self) -> list[Cohort]:
        """Every (evaluator, agent), sorted by evaluator then agent."""
        out = []
        for (ev, agent), c in self.counts.items():
            reasons = self.reasons.get((ev, agent))
            top = reasons.most_common(1)[0][0] if reasons else ""
            out.append(Cohort(ev, agent, {o: c.get(o, 0) for o in OUTCOMES}, top))
        return sorted(out, key=lambda k: (k.evaluator, k.agent or ""))

    def worst(self, n: int = 5) -> list[Cohort]:
        """The `n` cohorts with the lowest pass rate (ties: more results first), those with a failure only."""
        bad = [k for k in self.cohorts() if k.pass_rate < 1.0]
        return sorted(bad, key=lambda k: (k.pass_rate, -k.total, k.evaluator, k.agent or ""))[:n]

    def line(self) -> str:
        """The summary line every surface prints (`tracegrade.results.summary_text`), one eval per unit."""
        skipped = self.outcomes["not_evaluated"] if self.not_evaluated == "skip" else 0
        checks = {o: self.outcomes[o] for o in OUTCOMES}
        return summary_text(self.units, self.units - self.units_failed, self.units_failed, checks, skipped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "units": self.units,
            "units_failed": self.units_failed,
            "outcomes": {o: self.outcomes[o] for o in OUTCOMES},
            "cohorts": [
                {"evaluator": k.evaluator, "agent": k.agent, **k.counts, "pass_rate": k.pass_rate}
                for k in self.cohorts()
            ],
            "worst": [
                {"evaluator": k.evaluator, "agent": k.agent, "pass_rate": k.pass_rate, "reason": k.top_reason}
                for k in self.worst()
            ],  # fmt: skip
        } | self._cases_dict()

    def _cases_dict(self) -> dict[str, Any]:
        """With a case attribute: each case's runs as `[[evaluator, outcome], ...]` lists, for
        `reporting.batch_page.case_statistics` (pass@k, pass^k, Wilson intervals, flaky checks)."""
        if self.case_attribute is None:
            return {}
        runs = {cid: [[list(pair) for pair in unit] for unit in self.cases[cid]] for cid in sorted(self.cases)}
        return {"case_attribute": self.case_attribute, "case_runs": runs}

    def tables(self) -> list[Table]:
        """Rich tables: pass rate by evaluator and agent, then the worst cohorts. Names and reasons are
        text, never markup, their control characters written as escapes (`_text.printable`) and a long
        reason clipped."""
        from rich.table import Table
        from rich.text import Text

        from .._text import clip, printable

        def cell(value: str) -> Text:
            return Text(printable(clip(value)))

        by = Table(title="pass rate by evaluator and agent", title_justify="left")
        for name in ("evaluator", "agent", "results", "passed", "failed", "not evaluated", "errors", "pass rate"):
            text = name in ("evaluator", "agent")
            by.add_column(name, justify="left" if text else "right", no_wrap=text)
        for k in self.cohorts():
            c = k.counts
            by.add_row(
                cell(k.evaluator), cell(k.agent or "-"), str(k.total), str(c["passed"]), str(c["failed"]),
                str(c["not_evaluated"]), str(c["error"]), f"{k.pass_rate:.1%}",
            )  # fmt: skip
        out = [by]
        worst = self.worst()
        if worst:
            w = Table(title="worst cohorts", title_justify="left")
            for name in ("evaluator", "agent", "pass rate", "most frequent reason"):
                w.add_column(name)
            for k in worst:
                w.add_row(cell(k.evaluator), cell(k.agent or "-"), f"{k.pass_rate:.1%}", cell(k.top_reason))
            out.append(w)
        return out


@dataclass
class BatchResult:
    """What `grade_traces` returns: the summary, and the rows (one per graded unit and evaluator) as a
    pyarrow table — read back from `path` when results were written to a file."""

    summary: BatchSummary
    columns: tuple[str, ...]
    path: Path | None = None
    _table: Any = None

    @property
    def table(self) -> pa.Table:
        if self._table is None:
            if self.path is None:
                raise ValueError("no result rows")
            if output_format(self.path) == "parquet":
                import pyarrow.parquet as pq

                self._table = pq.read_table(self.path)
            else:
                import pyarrow as pa

                with open(self.path, "rb") as f:
                    docs = [orjson.loads(line) for line in f]
                schema = result_schema(self.columns)
                self._table = pa.Table.from_pylist(docs, schema=schema)
        return self._table

    def rows(self) -> list[dict[str, Any]]:
        return self.table.to_pylist()  # type: ignore[no-any-return]

    @property
    def exit_code(self) -> int:
        """`tracegrade batch`'s: 0 when every unit passed, 1 when one failed, 2 when no unit was graded
        (none left after sampling and filters: no checks is not a pass)."""
        if self.summary.units == 0:
            return 2
        return 0 if self.summary.passed else 1
