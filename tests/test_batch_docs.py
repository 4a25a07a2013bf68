"""Every ```python block of docs/batch.md runs, in a scratch directory holding a copy of fixtures/."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "batch.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"batch.md#{i}" for i in range(len(BLOCKS))])
def test_batch_doc_example_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "fixtures" / "otlp", tmp_path / "fixtures" / "otlp")
    shutil.copy(ROOT / "fixtures" / "spec.yaml", tmp_path / "fixtures" / "spec.yaml")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
    exec(compile(code, "batch.md", "exec"), namespace)


def test_the_cli_example_options_exist() -> None:
    from tracegrade.cli import build_parser

    for line in re.findall(r"^tracegrade batch .*(?:\n {4}.*)*", DOC.read_text(), re.M):
        args = line.replace("\\\n", " ").split()[1:]
        parsed = build_parser().parse_args([a.strip('"') for a in _shell(args)])
        assert parsed.command == "batch"


def _shell(args: list[str]) -> list[str]:
    import shlex

    return shlex.split(" ".join(args))
