"""The shipped JSON Schema of YAML transcripts: generated from the models, current, accepting every
transcript the loader accepts, rejecting typos and wrong types, and describing each field."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
import sys
import textwrap
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml

from tracegrade import evaluators
from tracegrade.pytest_plugin.schema import SCHEMA_FILE, render_schema, transcript_json_schema
from tracegrade.pytest_plugin.transcript import Expect
from tracegrade.pytest_plugin.yaml_collect import TranscriptSpec, TurnSpec, load_transcript
from tracegrade.spec import evaluator_registry

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
REGENERATE = "python -m tracegrade.pytest_plugin.schema --write"


def _errors(document: Any) -> list[tuple[list[Any], str]]:
    return [(list(e.absolute_path), e.message) for e in VALIDATOR.iter_errors(document)]


def _is_transcript(data: Any) -> bool:
    return isinstance(data, dict) and "turns" in data


def _repo_transcripts() -> list[tuple[str, Any]]:
    """Transcript files (.yaml/.yml with `turns`) under tests/, fixtures/, docs/, examples/, and the
    ```yaml blocks of the docs that hold a whole transcript."""
    found: list[tuple[str, Any]] = []
    for folder in ("tests", "fixtures", "docs", "examples"):
        for path in sorted((REPO / folder).rglob("*.y*ml")) if (REPO / folder).is_dir() else []:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            if _is_transcript(data):
                found.append((str(path.relative_to(REPO)), data))
    for page in sorted([*(REPO / "docs").glob("*.md"), REPO / "README.md"]):
        for i, block in enumerate(re.findall(r"```ya?ml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)):
            data = yaml.safe_load(block)
            if _is_transcript(data):
                found.append((f"{page.relative_to(REPO)} (yaml block {i + 1})", data))
    return found


def test_shipped_schema_is_the_one_the_models_generate() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(), f"the schema is stale: run `{REGENERATE}`"


def test_schema_file_is_package_data_and_a_valid_draft_2020_12_schema() -> None:
    shipped = files("tracegrade.pytest_plugin").joinpath("schema", "transcript.json")
    assert shipped.is_file()
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_python_m_prints_the_shipped_schema() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracegrade.pytest_plugin.schema"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert done.stdout == SCHEMA_FILE.read_text(encoding="utf-8")
    assert done.stderr == ""


@pytest.mark.parametrize(("where", "document"), _repo_transcripts(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_transcript_in_the_repo_validates(where: str, document: Any) -> None:
    assert _errors(document) == []


def test_the_repo_has_transcripts_to_validate() -> None:
    assert len(_repo_transcripts()) >= 2  # docs/pytest.md and docs/vocabulary.md hold whole transcripts


def _loaded_transcripts_in_tests(tmp: Path) -> list[tuple[str, Any]]:
    """Every string literal in tests/ that is a transcript `load_transcript` accepts."""
    accepted: list[tuple[str, Any]] = []
    for module in sorted((REPO / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and "turns" in node.value):
                continue
            text = textwrap.dedent(node.value)
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError:
                continue
            if not _is_transcript(data):
                continue
            path = tmp / "transcript.yaml"
            path.write_text(text, encoding="utf-8")
            try:
                load_transcript(path)
            except Exception:  # an invalid transcript on purpose; the schema need not agree on why
                continue
            accepted.append((f"{module.relative_to(REPO)}:{node.lineno}", data))
    return accepted


def test_every_transcript_the_loader_accepts_in_the_tests_validates(tmp_path: Path) -> None:
    """Against the schema of every evaluator the loader knows now: test modules register their own."""
    accepted = _loaded_transcripts_in_tests(tmp_path)
    assert len(accepted) >= 5
    validator = jsonschema.Draft202012Validator(transcript_json_schema(evaluator_registry()))
    errors = {where: [e.message for e in validator.iter_errors(data)] for where, data in accepted}
    assert {where: found for where, found in errors.items() if found} == {}


def test_a_misspelt_key_is_rejected_where_it_is() -> None:
    assert sorted(_errors({"id": "t", "turn": [{"user": "hi"}]})) == [
        ([], "'turns' is a required property"),
        ([], "Additional properties are not allowed ('turn' was unexpected)"),
    ]
    typo = {"id": "t", "turns": [{"user": "hi", "expect": {"reply_contains": ["ok"]}}]}
    assert _errors(typo) == [
        (["turns", 0, "expect"], "Additional properties are not allowed ('reply_contains' was unexpected)")
    ]
    nested = {"id": "t", "turns": [{"user": "hi", "expect": {"judge": {"rubric": "x", "modle": "m"}}}]}
    assert [path for path, _ in _errors(nested)] == [["turns", 0, "expect", "judge"]]


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"id": "t", "threshold": "high", "turns": [{"user": "hi"}]}, ["threshold"]),
        ({"id": "t", "threshold": 1.5, "turns": [{"user": "hi"}]}, ["threshold"]),
        ({"id": "t", "runs": 0, "turns": [{"user": "hi"}]}, ["runs"]),
        ({"id": "t", "turns": []}, ["turns"]),
        ({"id": "t", "turns": [{"user": 3}]}, ["turns", 0, "user"]),
        ({"id": "t", "turns": [{"user": "hi", "expect": {"reply_contains_any": "scalar"}}]},
         ["turns", 0, "expect", "reply_contains_any"]),
        ({"id": "t", "turns": [{"user": "hi", "expect": {"tool_calls_args": [{"tool": "x", "mode": "fuzzy"}]}}]},
         ["turns", 0, "expect", "tool_calls_args", 0, "mode"]),
        ({"id": "t", "turns": [{"user": "hi", "expect": {"evaluators": [{"MaxToolCalls": "five"}]}}]},
         ["turns", 0, "expect", "evaluators", 0]),
        ({"id": "t", "turns": [{"user": "hi", "expect": {"evaluators": ["NoSuchEvaluator"]}}]},
         ["turns", 0, "expect", "evaluators", 0]),
        ({"id": "t", "turns": [{"user": "hi", "expect": {"spans": [{"name_equal": "x"}]}}]},
         ["turns", 0, "expect", "spans", 0]),
    ],
)  # fmt: skip
def test_a_wrong_type_or_value_is_rejected_where_it_is(document: dict[str, Any], path: list[Any]) -> None:
    assert [p for p, _ in _errors(document)] == [path]


def test_evaluators_take_the_spec_syntax_with_their_own_parameters() -> None:
    given = [
        "NoErrorSpans",
        {"MaxToolCalls": 3},
        {"ToolCorrectness": {"expected_tools": ["search"]}},
        {"JudgeEvaluator": {"rubric": "polite", "retries": 0}},
    ]
    assert _errors({"id": "t", "turns": [{"user": "hi", "expect": {"evaluators": given}}]}) == []
    wrong = {"id": "t", "turns": [{"user": "hi", "expect": {"evaluators": [{"ToolCorrectness": {"tools": []}}]}}]}
    assert _errors(wrong) != []


def test_schema_follows_the_models() -> None:
    defs = SCHEMA["$defs"]
    assert set(SCHEMA["properties"]) == set(TranscriptSpec.model_fields)
    assert set(defs["Turn"]["properties"]) == set(TurnSpec.model_fields)
    assert set(defs["Expect"]["properties"]) == {f.name for f in dataclasses.fields(Expect)}
    builtin = {n for n, c in evaluator_registry().items() if getattr(evaluators, n, None) is c}
    assert {k.removesuffix("Entry") for k in defs if k.endswith("Entry")} == builtin


def test_every_transcript_field_has_a_description_and_evaluators_their_docstring() -> None:
    defs = SCHEMA["$defs"]
    owners = {"Transcript": SCHEMA, **{n: defs[n] for n in ("Turn", "Expect", "JudgeConfig", "ToolCallArgsConfig")}}
    undescribed = [f"{owner}.{name}" for owner, schema in owners.items()
                   for name, prop in schema["properties"].items() if not prop.get("description")]  # fmt: skip
    assert undescribed == []
    entry = defs["ToolCorrectnessEntry"]["properties"]["ToolCorrectness"]
    assert entry["description"] == defs["ToolCorrectness"]["description"] != ""


def test_registered_evaluators_can_be_added_on_request() -> None:
    @dataclasses.dataclass
    class Polite:
        """The reply says please."""

        word: str = "please"

    generated = transcript_json_schema({"Polite": Polite})
    assert set(k for k in generated["$defs"] if k.endswith("Entry")) == {"PoliteEntry"}
    assert generated["$defs"]["Polite"]["properties"]["word"]["default"] == "please"
