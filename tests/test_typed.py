"""The package ships its types (PEP 561): a user's type checker sees tracegrade's annotations."""

from __future__ import annotations

import importlib.resources
import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

USER_CODE = """
from tracegrade import EvalResult, ToolCall, capture, grade
from tracegrade.evaluators import MaxToolCalls, ToolCorrectness

def check() -> list[EvalResult]:
    with capture() as cap:
        pass
    calls: list[ToolCall] = cap.trajectory.tool_calls
    assert not calls
    return grade(cap, [ToolCorrectness(expected_tools=["search"]), MaxToolCalls(max_calls=3)])
"""


def test_py_typed_marker_is_in_the_package() -> None:
    assert importlib.resources.files("tracegrade").joinpath("py.typed").is_file()


def _mypy(tmp_path: Path, code: str) -> tuple[str, int]:
    src = tmp_path / "user_code.py"
    src.write_text(textwrap.dedent(code))
    config = tmp_path / "mypy.ini"  # check tracegrade's annotations, not its dependencies' (seconds, not minutes)
    config.write_text("[mypy]\nfollow_imports = skip\n[mypy-tracegrade.*]\nfollow_imports = normal\n")
    out, err, status = mypy_api.run(
        ["--strict", "--config-file", str(config), "--cache-dir", str(tmp_path / ".mypy_cache"), str(src)]
    )
    return out + err, status


def test_a_user_type_checker_sees_tracegrade_annotations(tmp_path: Path) -> None:
    out, status = _mypy(tmp_path, USER_CODE)
    assert status == 0, out
    # the same code with a wrongly typed argument is caught: the annotations are read, not Any
    out, status = _mypy(tmp_path, USER_CODE.replace("max_calls=3", 'max_calls="3"'))
    assert status == 1
    assert 'Argument "max_calls" to "MaxToolCalls" has incompatible type "str"; expected "int"' in out
    assert "import-untyped" not in out
    # names load lazily at run time, but a type checker still knows which ones exist
    out, status = _mypy(tmp_path, USER_CODE.replace("import EvalResult,", "import EvalResults,"))
    assert status == 1 and 'Module "tracegrade" has no attribute "EvalResults"' in out, out
