"""pytest-agent-eval's `pytest_agent_eval.adapters.smolagents` import path, so that its users switch with one
import change. `SmolagentsAdapter` is re-exported from its home, `tracegrade.pytest_plugin.adapters`.
"""

from __future__ import annotations

from ..pytest_plugin.adapters import SmolagentsAdapter as SmolagentsAdapter
