"""pytest-agent-eval's `pytest_agent_eval.adapters.langchain` import path, so that its users switch with one
import change. `LangChainAdapter` is re-exported from its home, `tracegrade.pytest_plugin.adapters`.
"""

from __future__ import annotations

from ..pytest_plugin.adapters import LangChainAdapter as LangChainAdapter
