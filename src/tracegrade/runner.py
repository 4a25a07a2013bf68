"""pytest-agent-eval's `pytest_agent_eval.runner` import path, so that its users switch with one import
change. Each name is re-exported from its home: `EvalSession` in `tracegrade.pytest_plugin.session`;
`run_transcript` in `tracegrade.pytest_plugin.runner`.
"""

from __future__ import annotations

from .pytest_plugin.runner import run_transcript as run_transcript
from .pytest_plugin.session import EvalSession as EvalSession
