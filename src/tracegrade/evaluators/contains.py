"""pytest-agent-eval's `pytest_agent_eval.evaluators.contains` import path, so that its users switch with
one import change. `ContainsEvaluator` is re-exported from its home, `tracegrade.evaluators.reply`
(public as `tracegrade.evaluators.ContainsEvaluator`).
"""

from __future__ import annotations

from .reply import ContainsEvaluator as ContainsEvaluator
