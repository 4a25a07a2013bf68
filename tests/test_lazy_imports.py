"""Loading the plugin costs a session that grades nothing almost nothing; every public name still resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import tracegrade
import tracegrade.pytest_plugin

# What pytest loading the plugin must not import: the evaluators and judges, the transcript models,
# the YAML collector (and PyYAML), the trace-file readers.
HEAVY = [
    "tracegrade.evaluators",
    "tracegrade.evaluators.judge",
    "tracegrade.grading",
    "tracegrade.ingest",
    "tracegrade.pytest_plugin.session",
    "tracegrade.pytest_plugin.transcript",
    "tracegrade.pytest_plugin.yaml_collect",
    "yaml",
]

PROBE = """
import sys
from tracegrade.pytest_plugin.config import AgentEvalSettings

def pytest_sessionfinish(session):
    heavy = {heavy!r}
    print("\\nLOADED", sorted(m for m in heavy if m in sys.modules))
    print("SETTINGS_BUILT", AgentEvalSettings.__pydantic_complete__)
"""


def test_a_session_that_grades_nothing_imports_no_evaluator(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE.format(heavy=HEAVY))
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    # a fresh interpreter: this process has imported everything already
    result = pytester.runpytest_subprocess("-s")  # the plugin loads through its entry point
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["LOADED []", "SETTINGS_BUILT False"])


def test_configured_settings_are_still_validated(pytester: pytest.Pytester) -> None:
    """The no-settings shortcut skips validation only when there is nothing to validate."""
    pytester.makepyprojecttoml("[tool.agent_eval]\nruns = 0\n")
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid agent_eval setting 'runs' = 0 ([[]tool.agent_eval[]] in *"])


def test_the_unvalidated_defaults_are_the_validated_defaults() -> None:
    from tracegrade.pytest_plugin.config import AgentEvalSettings, resolve_settings

    settings, sources = resolve_settings(None, {}, {})
    assert settings == AgentEvalSettings.model_validate({}) and sources == {}
    assert settings.yaml_dirs is not AgentEvalSettings.model_construct().yaml_dirs  # not a shared default list


@pytest.mark.parametrize("name", ["tracegrade", "tracegrade.pytest_plugin"])
def test_every_public_name_resolves_in_a_fresh_interpreter(name: str) -> None:
    code = (
        f"import {name} as p\n"
        "missing = [n for n in p.__all__ if not hasattr(p, n)]\n"
        "assert not missing, missing\n"
        "assert set(p.__all__) <= set(dir(p)), set(p.__all__) - set(dir(p))\n"
        f"from {name} import *\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)


def test_names_are_the_objects_of_their_modules() -> None:
    from tracegrade.evaluators import ToolCallEvaluator
    from tracegrade.pytest_plugin.session import EvalSession

    assert tracegrade.ToolCallEvaluator is ToolCallEvaluator
    assert tracegrade.pytest_plugin.EvalSession is EvalSession
    # the submodule tracegrade.capture never shadows the context manager of the same name
    importlib.import_module("tracegrade.capture")
    assert tracegrade.capture.__name__ == "capture" and isinstance(tracegrade.capture, type)
    with pytest.raises(AttributeError, match="module 'tracegrade' has no attribute 'TrajectoryMatc'"):
        tracegrade.TrajectoryMatc  # noqa: B018


@pytest.mark.parametrize("name", ["tracegrade", "tracegrade.batch", "tracegrade.pytest_plugin", "tracegrade.receiver"])
def test_a_lazy_package_resolves_only_its_public_names(name: str) -> None:
    """A name a lazy package loads on demand is in its `__all__`: no importable name hides outside it."""
    package = importlib.import_module(name)
    assert set(package._LAZY) <= set(package.__all__)


def test_names_without_a_top_level_home_are_not_attributes_of_the_package() -> None:
    with pytest.raises(AttributeError, match="no attribute 'TrajectoryMatch'"):
        tracegrade.TrajectoryMatch  # noqa: B018  (its home is tracegrade.evaluators)
