"""Audio turns: `Turn(audio=...)` / YAML `audio:` name a recording (e.g. a WAV) the agent receives
as the `"audio"` entry of the turn's history message. tracegrade passes the path on; it neither
synthesises nor plays audio."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .transcript import Turn

__all__ = ["check_audio", "resolve_audio"]


def check_audio(value: Any, where: str) -> None:
    """`TypeError` unless `value` is None, a str or an `os.PathLike`."""
    if value is not None and not isinstance(value, str | os.PathLike):
        raise TypeError(f"{where}.audio must be a path (str or os.PathLike), got {type(value).__name__}: {value!r}")


def resolve_audio(turn: Turn, base: Path) -> Turn:
    """Set `turn.audio` to a `Path`, a relative one taken relative to `base` (the YAML file's
    directory); returns `turn`."""
    if turn.audio is not None:
        turn.audio = base / turn.audio  # an absolute path stays as it is
    return turn
