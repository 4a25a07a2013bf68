"""pytest-agent-eval's `pytest_agent_eval.adapters.pydantic_ai` import path, so that its users switch with one
import change. `PydanticAIAdapter` is re-exported from its home, `tracegrade.pytest_plugin.adapters`.
"""

from __future__ import annotations

from ..pytest_plugin.adapters import PydanticAIAdapter as PydanticAIAdapter
