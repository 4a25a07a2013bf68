"""Every code example of docs/pytest.md runs.

A fenced block preceded by `<!-- doc-test: example=NAME [file=PATH] [outcomes=passed=1,...] -->`
belongs to example NAME. Blocks with a `file` are written into one pytester project per example,
which is run with `--agent-eval-live` and must end with `outcomes`; a pyproject-only example is
validated as settings; a python block without a `file` is executed as a script. Every python block
must carry such a comment, so none goes untested.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from _plugin_helpers import clean_agent_eval_env  # noqa: F401
from tracegrade.pytest_plugin.config import resolve_settings

DOC = Path(__file__).resolve().parent.parent / "docs" / "pytest.md"
_BLOCK = re.compile(r"(?:<!-- doc-test: (?P<meta>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)\n```", re.S)


@dataclass
class Example:
    name: str
    files: dict[str, str] = field(default_factory=dict)
    scripts: list[str] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)


def _examples() -> tuple[dict[str, Example], list[str]]:
    examples: dict[str, Example] = {}
    untested: list[str] = []
    for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8")):
        lang, code, meta = m["lang"], m["code"] + "\n", m["meta"]
        if meta is None:
            if lang == "python":
                untested.append(code.splitlines()[0])
            continue
        opts = dict(item.split("=", 1) for item in shlex.split(meta))
        example = examples.setdefault(opts["example"], Example(opts["example"]))
        if "file" in opts:
            example.files[opts["file"]] = code
        else:
            example.scripts.append(code)
        if "outcomes" in opts:
            example.outcomes = {k: int(v) for k, v in (o.split("=") for o in opts["outcomes"].split(","))}
    return examples, untested


EXAMPLES, UNTESTED = _examples()


def test_every_python_block_is_tested() -> None:
    assert not UNTESTED, f"python blocks in {DOC.name} without a doc-test comment: {UNTESTED}"
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("name", sorted(n for n, e in EXAMPLES.items() if e.scripts))
def test_script_example_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for code in EXAMPLES[name].scripts:
        exec(compile(code, f"{DOC.name}:{name}", "exec"), {"__name__": f"doc_{name}"})


@pytest.mark.parametrize("name", sorted(n for n, e in EXAMPLES.items() if e.files))
def test_project_example_runs(name: str, pytester: pytest.Pytester, tmp_path: Path) -> None:
    example = EXAMPLES[name]
    if set(example.files) == {"pyproject.toml"}:  # a settings example: must be valid settings
        path = tmp_path / "pyproject.toml"
        path.write_text(example.files["pyproject.toml"])
        settings, sources = resolve_settings(path, {}, {})
        assert set(sources) == {k for k in example.files["pyproject.toml"].split() if k in type(settings).model_fields}
        return
    for rel, code in example.files.items():
        target = pytester.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    result = pytester.runpytest("--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(**example.outcomes)


# --- bug: the configuration table gave `yaml_dirs` a default of `[]` (the code's is ["tests/evals"]) ---


def test_the_configuration_tables_defaults_are_the_settings_defaults() -> None:
    import tomllib

    from tracegrade.pytest_plugin.config import AgentEvalSettings

    section = DOC.read_text(encoding="utf-8").split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (.*?) \|", section, re.M)
    defaults = AgentEvalSettings()
    documented = {key: None if shown == "none" else tomllib.loads(f"v = {shown.strip('`')}")["v"] for key, shown in rows}
    assert documented == {key: getattr(defaults, key) for key in documented}
    assert set(documented) == set(AgentEvalSettings.model_fields) - {"groups"}  # groups: a section of its own
