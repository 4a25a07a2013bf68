"""The commands the shipped example files document run as written, from a clean checkout, and pass."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_command_documented_in_fixtures_spec_yaml_passes() -> None:
    first = (ROOT / "fixtures" / "spec.yaml").read_text().splitlines()[0]
    assert first.startswith("# tracegrade grade "), first
    argv = shlex.split(first.removeprefix("# "))[1:]
    done = subprocess.run(
        [sys.executable, "-m", "tracegrade", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "failed" not in done.stdout.splitlines()[-1].replace("0 failed", ""), done.stdout[-500:]
