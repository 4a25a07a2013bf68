"""pytest hooks and fixtures; thin: the logic lives in importable modules."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..capture import capture


@pytest.fixture
def span_capture() -> Callable[..., capture]:
    """`with span_capture() as cap: ...` records the spans of the block (see `tracegrade.capture`)."""
    return capture
