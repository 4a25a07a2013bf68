"""Every ```python block in docs/receiver.md runs (each in a fresh namespace, real receiver and exporter)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "receiver.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"receiver.md#{i}" for i in range(len(BLOCKS))])
def test_receiver_doc_example_runs(code: str) -> None:
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
    exec(compile(code, str(DOC), "exec"), namespace)


def test_the_doc_has_examples() -> None:
    assert len(BLOCKS) == 4
