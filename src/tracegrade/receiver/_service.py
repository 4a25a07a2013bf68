"""Run a service under test as a subprocess that exports its telemetry to an `OTLPReceiver`.

`ServiceProcess` starts the command with the receiver's endpoint in its environment
(`OTEL_EXPORTER_OTLP_ENDPOINT`, a short `OTEL_BSP_SCHEDULE_DELAY` so spans leave promptly), waits
until it is ready (an HTTP URL answers, or a line matching a pattern appears in its output), and
stops it (SIGTERM, then SIGKILL). Its output goes to a log file; failures quote the log's end.
`session_receiver()` is the body of the pytest plugin's session-scoped `otlp_receiver` fixture.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from ..errors import ServiceError
from ._server import OTLPReceiver

__all__ = ["ServiceError", "ServiceProcess", "session_receiver"]

_LOG_TAIL = 4000


_SESSION: list[OTLPReceiver] = []


def session_receiver() -> Iterator[OTLPReceiver]:
    """One receiver for a whole test session (the `otlp_receiver` fixture); while it runs,
    `agent_eval` turns capture with it (`active_session_receiver`)."""
    with OTLPReceiver(port=0) as rx:
        _SESSION.append(rx)
        try:
            yield rx
        finally:
            _SESSION.remove(rx)


def active_session_receiver() -> OTLPReceiver | None:
    """The `otlp_receiver` fixture's receiver while it is active in this process, else None."""
    return _SESSION[-1] if _SESSION else None


class ServiceProcess:
    """``with ServiceProcess([sys.executable, "app.py"], rx, ready_url=".../health") as svc:``

    `ready_url`: ready once a GET answers (any status below 500). `ready_pattern`: ready once a
    line of its output matches. Neither: ready once started. `env` adds to the current
    environment (after the OTLP variables, so it can override them).
    """

    def __init__(
        self,
        command: Sequence[str],
        receiver: OTLPReceiver,
        *,
        ready_url: str | None = None,
        ready_pattern: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        batch_delay_ms: int = 100,
    ) -> None:
        self.command = list(command)
        self.receiver = receiver
        self.ready_url = ready_url
        self.ready_pattern = re.compile(ready_pattern) if ready_pattern else None
        self.env = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_BSP_SCHEDULE_DELAY": str(batch_delay_ms),
            "OTEL_BLRP_SCHEDULE_DELAY": str(batch_delay_ms),
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.log_path: Path | None = None
        self._output: str | None = None

    def logs(self) -> str:
        """Everything the service wrote to stdout and stderr so far."""
        if self._output is not None:
            return self._output
        if self.log_path is None:
            return ""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def _fail(self, problem: str) -> ServiceError:
        tail = self.logs()[-_LOG_TAIL:]
        return ServiceError(f"service {' '.join(self.command)!r}: {problem}\n--- its output (end) ---\n{tail}")

    def start(self) -> ServiceProcess:
        self._log = tempfile.NamedTemporaryFile(prefix="tracegrade-service-", suffix=".log", delete=False)  # noqa: SIM115
        self.log_path = Path(self._log.name)
        self.proc = subprocess.Popen(
            self.command, stdout=self._log, stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + self.startup_timeout
        while not self._ready():
            if self.proc.poll() is not None:
                raise self._fail(f"exited with code {self.proc.returncode} before it was ready")
            if time.monotonic() > deadline:
                self.stop()
                raise self._fail(f"not ready after {self.startup_timeout:g} s")
            time.sleep(0.05)
        return self

    def _ready(self) -> bool:
        if self.ready_url is not None:
            try:
                with urllib.request.urlopen(self.ready_url, timeout=1):
                    return True
            except urllib.error.HTTPError as e:
                return e.code < 500
            except OSError:
                return False
        if self.ready_pattern is not None:
            return any(self.ready_pattern.search(line) for line in self.logs().splitlines())
        return True

    def stop(self) -> int | None:
        """SIGTERM (the service flushes its exporter), SIGKILL after `stop_timeout`; the exit code."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._output = self.logs()
        return proc.returncode

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        code = self.stop()
        if et is not None and self.log_path is not None:
            # the test failed: show what the service said (pytest prints captured stderr with the failure)
            import sys

            print(f"--- output of service {' '.join(self.command)!r} ---\n{self.logs()[-_LOG_TAIL:]}", file=sys.stderr)
        elif code not in (0, -signal.SIGTERM, None):
            raise self._fail(f"exited with code {code}")
        if self.log_path is not None and et is None:
            self.log_path.unlink(missing_ok=True)
