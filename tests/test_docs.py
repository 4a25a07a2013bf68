"""Every ```python block in README.md, docs/concepts.md and docs/vocabulary.md runs (each block in a fresh namespace)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tracegrade.dialects import DIALECTS

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "concepts.md", ROOT / "docs" / "vocabulary.md"]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for i, code in enumerate(BLOCK.findall(doc.read_text())):
            out.append((f"{doc.name}#{i}", code))
    return out


def _record_refund_run(directory: Path) -> None:
    """The recording README's replay example loads: a real Pydantic AI run calling lookup_order, refund."""
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from tracegrade import capture
    from tracegrade.pytest_plugin.record import TraceRecorder

    agent = Agent(TestModel(call_tools=["lookup_order", "refund"]), name="support")
    agent.instrument = True

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        return "shipped"

    @agent.tool_plain
    def refund(order_id: str) -> str:
        return "refunded"

    recorder = TraceRecorder(directory)
    for _ in range(2):
        with capture() as cap:
            agent.run_sync("refund order 7")
        recorder.save("tests/test_support.py::test_refund", cap.spans)


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_doc_example_runs(where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in a scratch directory holding a copy of fixtures/; test functions a block defines are
    called too, with the plugin's `recorded_trace` fixture bound to a real recorded run."""
    from tracegrade.pytest_plugin.record import recorded_trace

    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tracegrade.dialects.DIALECTS", list(DIALECTS))  # a block may register a dialect
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
    exec(compile(code, where, "exec"), namespace)
    for name, fn in list(namespace.items()):
        if name.startswith("test_") and callable(fn):
            _record_refund_run(tmp_path / "fixtures" / "traces")
            fn(recorded_trace=recorded_trace)


def test_the_pytest_agent_eval_page_names_tests_that_exist_and_top_level_names_that_import() -> None:
    """docs/pytest-agent-eval.md: every difference points at a test that exists, and the names it says
    the top level holds do import from `tracegrade`."""
    import importlib

    text = (ROOT / "docs" / "pytest-agent-eval.md").read_text()
    refs = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`(?:, `::(\w+)`)?", text)
    assert len(refs) >= 8
    for file, *names in refs:
        source = (ROOT / file).read_text()
        for name in filter(None, names):
            assert f"def {name}(" in source, f"{file}::{name}"
    listed = re.search(r"The same\ntop-level names exist: (.*?)\.\n", text, re.S)
    assert listed
    tracegrade = importlib.import_module("tracegrade")
    for name in re.findall(r"`(\w+)`", listed.group(1)):
        assert name in tracegrade.__all__, name
