"""pytest-agent-eval's `pytest_agent_eval.evaluators.tool_call` import path, so that its users switch
with one import change. `ToolCallEvaluator` and `ToolCallArgsEvaluator` are re-exported from their
home, `tracegrade.evaluators.tools` (public as `tracegrade.evaluators.<name>`).
"""

from __future__ import annotations

from .tools import ToolCallArgsEvaluator as ToolCallArgsEvaluator
from .tools import ToolCallEvaluator as ToolCallEvaluator
