"""pytest-agent-eval's `pytest_agent_eval.yaml_loader` import path, so that its users switch with one
import change. Each name is re-exported from its home: `TranscriptError` in `tracegrade.errors`;
`load_transcript` (with `default_threshold` / `default_runs`) in `tracegrade.pytest_plugin.runner`;
`validate_transcript_dict` in `tracegrade.pytest_plugin.yaml_collect`.
"""

from __future__ import annotations

from .errors import TranscriptError as TranscriptError
from .pytest_plugin.runner import load_transcript as load_transcript
from .pytest_plugin.yaml_collect import validate_transcript_dict as validate_transcript_dict
