"""`OTLPReceiver`: OTLP/HTTP (`/v1/traces`, `/v1/logs`; protobuf or JSON; gzip or deflate) on aiohttp.

The server runs its own event loop in a daemon thread. Answers follow the OTLP/HTTP spec: 200 with
an `Export*ServiceResponse` in the request's encoding (partial success for rejected spans), 400
with a `google.rpc.Status` naming the problem, 413 for a body over the limit, 415 for an
unsupported content type or encoding, and 429/503 with `Retry-After` when the receiver is full, so
an SDK exporter retries the request and nothing is lost. No input makes it raise.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
import socket
import threading
import zlib
from collections.abc import Callable
from dataclasses import fields, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..ingest._bytes import spans_from_json_bytes, spans_from_protobuf_bytes
from ..ingest._errors import TraceFormatError
from ._logs import logs_from_json_bytes, logs_from_protobuf_bytes
from ._store import Admission, AssembledTrace, Limits, ReceiverStats, RemoteLink, TraceStore

if TYPE_CHECKING:
    from aiohttp import ClientSession, web

__all__ = ["OTLPReceiver"]

_log = logging.getLogger("tracegrade.receiver")

_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"
_INVALID_ARGUMENT, _RESOURCE_EXHAUSTED, _UNAVAILABLE, _INTERNAL = 3, 8, 14, 13
_SWEEP_SECONDS = 1.0


class _Refused(Exception):
    def __init__(self, status: int, message: str, code: int = _INVALID_ARGUMENT) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _where(e: TraceFormatError) -> str:
    """Where in a request body the problem is (`line 41, column 22: `, a JSON path), or ""."""
    parts = [f"line {e.line}"] if e.line is not None else []
    if e.location:
        parts.append(e.location)
    return ", ".join(parts) + ": " if parts else ""


_WBITS = {"gzip": 31, "deflate": 15}  # deflate: zlib-wrapped (RFC 9110), as OTel SDK exporters send it


_NON_ZERO = re.compile(rb"[^\x00]")


def _inflate(body: bytes, encoding: str, limit: int) -> bytes:
    """Decompress at most `limit` bytes in all (413 beyond: no decompression bombs). A gzip body is
    every member in turn (RFC 1952), zero padding after one ignored, as `gzip.GzipFile` reads them;
    anything else after the compressed data is a 400. Linear in the body, however many members."""
    view = memoryview(body)
    parts: list[bytes] = []
    size = pos = members = 0
    while True:
        d = zlib.decompressobj(wbits=_WBITS[encoding])
        step = 1024  # grows while one stream lasts: what `unused_data` copies stays small per stream
        while not d.eof:
            if pos >= len(body):
                raise _Refused(400, f"truncated {encoding} body ({_nth(encoding, members)} ends early)")
            chunk = view[pos : pos + step]
            try:
                part = d.decompress(chunk, limit + 1 - size)
            except zlib.error as e:
                raise _Refused(400, f"corrupt {encoding} body ({_nth(encoding, members)}: {e})") from None
            size += len(part)
            if size > limit:
                raise _Refused(413, f"decompressed body exceeds max_body_bytes={limit:,}")
            parts.append(part)
            pos += len(chunk) - len(d.unused_data)
            step = min(step * 2, 1 << 20)
        members += 1
        if encoding == "gzip":
            nonzero = _NON_ZERO.search(body, pos)
            pos = len(body) if nonzero is None else nonzero.start()
        if pos == len(body):
            return parts[0] if len(parts) == 1 else b"".join(parts)
        if encoding != "gzip" or body[pos : pos + 2] != b"\x1f\x8b":
            what = "are not a gzip member" if encoding == "gzip" else "follow it (a deflate body is one zlib stream)"
            raise _Refused(400, f"{len(body) - pos:,} byte(s) after the end of the {encoding} data (at byte {pos:,}) {what}")


def _nth(encoding: str, done: int) -> str:
    """The stream after `done` complete ones, for messages."""
    return f"gzip member {done + 1}" if encoding == "gzip" else "deflate stream"


class OTLPReceiver:
    """An OTLP/HTTP receiver on 127.0.0.1 that assembles what it receives into traces.

    ``with OTLPReceiver(port=0) as rx:`` starts it on a free port; hand ``rx.endpoint`` to a service
    as ``OTEL_EXPORTER_OTLP_ENDPOINT``. Binding a non-loopback host needs ``allow_remote=True`` (and
    logs a warning). ``forward`` is an upstream OTLP/HTTP base URL: every accepted request is sent
    on to it, bytes and encoding unchanged. Limits are the fields of `Limits`, as keyword arguments.
    `grpc_port` also serves OTLP/gRPC on that port (0: a free one; `rx.grpc_endpoint`), with the
    `receiver-grpc` extra (grpcio).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_remote: bool = False,
        forward: str | None = None,
        grpc_port: int | None = None,
        **limits: Any,
    ) -> None:
        if not _is_loopback(host):
            if not allow_remote:
                raise ValueError(
                    f"OTLPReceiver: refusing to bind non-loopback host {host!r}; pass allow_remote=True to accept "
                    "telemetry from other machines"
                )
            _log.warning("OTLPReceiver binds %s (not loopback): any host that can reach it may send telemetry", host)
        self.host = host
        self._requested_port = port
        try:
            self.limits = replace(Limits(), **limits)
        except TypeError:
            known = ", ".join(f.name for f in fields(Limits))
            raise TypeError(f"OTLPReceiver: unknown limit(s) {sorted(limits)}; limits are: {known}") from None
        self.forward = forward.rstrip("/") if forward else None
        self._store = TraceStore(self.limits)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None
        self._forwards: set[asyncio.Task[None]] = set()
        self._port: int | None = None
        self._stopping: asyncio.Event | None = None
        self._refusals: list[int] = []
        self._grpc_port_requested = grpc_port
        self._grpc_server: Any = None
        self._grpc_port: int | None = None
        self.on_data: Callable[[], None] | None = None
        """Called (in the server thread) after each accepted request; must be quick and not raise."""

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("OTLPReceiver is not running; use `with OTLPReceiver() as rx:` or call start()")
        return self._port

    @property
    def grpc_endpoint(self) -> str:
        """`http://127.0.0.1:PORT` of OTLP/gRPC (with `grpc_port=`), for an insecure gRPC exporter."""
        if self._grpc_port is None:
            raise RuntimeError("OTLPReceiver: gRPC is not running; pass grpc_port=0 (and install grpcio)")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._grpc_port}"

    @property
    def endpoint(self) -> str:
        """The base URL (`http://127.0.0.1:PORT`), for `OTEL_EXPORTER_OTLP_ENDPOINT`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> OTLPReceiver:
        if self._thread is not None:
            raise RuntimeError("OTLPReceiver already started")
        import aiohttp  # noqa: F401  (fail here, in the caller's thread, if the extra is missing)

        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve(ready))
            except BaseException as e:  # reported to start() when it happens before ready
                failure.append(e)
                ready.set()
                if self._port is not None:
                    _log.exception("OTLPReceiver stopped unexpectedly")
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name="tracegrade-otlp-receiver", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        if self._grpc_port_requested is not None:
            from ._grpc import start_grpc

            try:
                self._grpc_server, self._grpc_port = start_grpc(self, self.host, self._grpc_port_requested)
            except BaseException:
                self.stop()
                raise
        return self

    async def _serve(self, ready: threading.Event) -> None:
        from aiohttp import ClientSession, ClientTimeout, web

        app = web.Application(client_max_size=self.limits.max_body_bytes)
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_post("/v1/logs", self._logs)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, auto_decompress=False)
        await runner.setup()
        self._runner = runner
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._requested_port))
            await web.SockSite(runner, sock).start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        self._port = sock.getsockname()[1]
        if self.forward:
            self._session = ClientSession(timeout=ClientTimeout(total=30))
        self._stopping = asyncio.Event()
        ready.set()
        try:
            while True:
                try:
                    await asyncio.wait_for(self._stopping.wait(), _SWEEP_SECONDS)
                    break
                except TimeoutError:
                    self._store.sweep()
        finally:
            if self._forwards:
                await asyncio.wait(self._forwards, timeout=5)
            if self._session is not None:
                await self._session.close()
            await runner.cleanup()

    def stop(self) -> None:
        """Stop serving (in-flight requests finish; forwards get up to 5 s) and join the thread."""
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=5).wait()
            self._grpc_server, self._grpc_port = None, None
        if loop is not None and stopping is not None and thread.is_alive():
            loop.call_soon_threadsafe(stopping.set)
        thread.join()
        self._thread = None

    def __enter__(self) -> OTLPReceiver:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # --- consumers ---------------------------------------------------------------------------

    @property
    def stats(self) -> ReceiverStats:
        """A snapshot of the counters."""
        with self._store._cond:
            return self._store.stats.copy()

    @property
    def pending_traces(self) -> int:
        """Traces held (not yet settled, taken or expired)."""
        return len(self._store)

    def subscribe(self, trace_id: int, root_span_id: int | None = None) -> RemoteLink:
        """Claim a trace id (a capture's, when its local root span starts): its spans and log records
        are kept for the link until `link.settle(...)` takes them."""
        return self._store.subscribe(trace_id, root_span_id)

    def refuse_next(self, requests: int = 1, status: int = 503) -> None:
        """Answer the next `requests` requests with `status` (429 or 503) and Retry-After, as when
        full: to test that a service's exporter retries (and that nothing is lost when it does)."""
        if status not in (429, 503):
            raise ValueError(f"refuse_next: status must be 429 or 503, got {status}")
        with self._store._cond:
            self._refusals = [*self._refusals, *[status] * requests]

    def take_settled(self, settle: float = 2.0, give_up: float = 30.0) -> list[AssembledTrace]:
        """Take the traces nobody subscribed to that are done (see `TraceStore.take_settled`)."""
        return self._store.take_settled(settle, give_up)

    def take_remaining(self) -> list[AssembledTrace]:
        """Take every trace nobody subscribed to, whole or not (when stopping: nothing more will
        arrive); one not whole has notes on what had not arrived before it was taken."""
        return self._store.take_all("before the receiver stopped")

    # --- handlers ----------------------------------------------------------------------------

    async def _traces(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "traces")

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "logs")

    async def _handle(self, request: web.Request, signal: str) -> web.StreamResponse:
        from aiohttp import web

        ctype = request.content_type
        proto = ctype == _PROTOBUF
        self._count_request()
        try:
            if not proto and ctype != _JSON:
                raise _Refused(415, f"unsupported Content-Type {ctype!r}; expected {_PROTOBUF} or {_JSON}")
            body = await self._body(request)
            admission = self._admit(signal, body, proto)
        except TraceFormatError as e:
            self._count_refusal(400)
            return self._status(proto, 400, f"malformed {_MESSAGE[signal]}: {_where(e)}{e.problem}", _INVALID_ARGUMENT)
        except _Refused as e:
            self._count_refusal(e.status)
            return self._status(proto, e.status, e.message, e.code)
        except Exception as e:  # a bug, never the input's fault: answer, log, keep serving
            _log.exception("OTLPReceiver: unexpected error handling %s", request.path)
            return self._status(proto, 500, f"internal error: {type(e).__name__}", _INTERNAL)
        if admission.status != 200:
            code = _RESOURCE_EXHAUSTED if admission.status == 429 else _UNAVAILABLE
            response = self._status(proto, admission.status, admission.message, code)
            response.headers["Retry-After"] = str(self.limits.retry_after)
            return response
        headers = {"Content-Type": request.headers.get("Content-Type", _PROTOBUF)}
        if "Content-Encoding" in request.headers:
            headers["Content-Encoding"] = request.headers["Content-Encoding"]
        self._accepted(request.path, await request.read(), headers)
        return web.Response(
            body=_success(signal, proto, admission), content_type=_PROTOBUF if proto else _JSON
        )  # fmt: skip

    def _count_request(self) -> None:
        with self._store._cond:
            self._store.stats.requests += 1

    def _count_refusal(self, status: int) -> None:
        with self._store._cond:
            if status == 413:
                self._store.stats.refused_too_large += 1
            else:
                self._store.stats.refused_malformed += 1

    def _accepted(self, path: str, raw: bytes, headers: dict[str, str]) -> None:
        """After an accepted request from any thread: forward it (in the server's loop) and notify."""
        loop = self._loop
        if self._session is not None and loop is not None:
            loop.call_soon_threadsafe(self._forward, path, raw, headers)
        if self.on_data is not None:
            self.on_data()

    def _admit(self, signal: str, body: bytes, proto: bool) -> Admission:
        """Decode one export request (`TraceFormatError` when malformed) and admit it to the store."""
        refused = self._refused()
        if refused is not None:
            return refused
        limit = self.limits.max_attribute_bytes
        if signal == "traces":
            spans = (spans_from_protobuf_bytes if proto else spans_from_json_bytes)(body, limit)
            return self._store.add_spans(spans, len(body))
        logs = (logs_from_protobuf_bytes if proto else logs_from_json_bytes)(body, limit)
        return self._store.add_logs(logs, len(body))

    def _refused(self) -> Admission | None:
        with self._store._cond:
            if not self._refusals:
                return None
            status, *self._refusals = self._refusals
            self._store.stats.refused_busy += 1
        return Admission(status, message="refused on request (OTLPReceiver.refuse_next)")

    async def _body(self, request: web.Request) -> bytes:
        from aiohttp import web

        limit = self.limits.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            raise _Refused(413, f"body of {request.content_length:,} bytes exceeds max_body_bytes={limit:,}")
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", "deflate", ""):
            raise _Refused(415, f"unsupported Content-Encoding {encoding!r}; expected gzip, deflate or identity")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise _Refused(413, f"body exceeds max_body_bytes={limit:,}") from None
        return _inflate(body, encoding, limit) if encoding in _WBITS else body

    def _status(self, proto: bool, status: int, message: str, code: int) -> web.Response:
        from aiohttp import web

        if proto:
            from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]

            return web.Response(
                status=status, body=Status(code=code, message=message).SerializeToString(), content_type=_PROTOBUF
            )
        return web.Response(status=status, text=json.dumps({"code": code, "message": message}), content_type=_JSON)

    def _forward(self, path: str, raw: bytes, headers: dict[str, str]) -> None:
        """Send an accepted request on to the upstream (in the server's loop; retried on 429/5xx)."""
        assert self._session is not None and self.forward is not None
        url = self.forward + path
        session = self._session

        async def send() -> None:
            try:
                for _attempt in range(5):
                    async with session.post(url, data=raw, headers=headers) as resp:
                        await resp.read()
                        if resp.status in (429, 502, 503, 504):
                            await asyncio.sleep(float(resp.headers.get("Retry-After", "1") or 1))
                            continue
                        ok = resp.status < 300
                        if not ok:
                            _log.warning(
                                "OTLPReceiver: upstream %s answered %d to a forwarded request", url, resp.status
                            )
                        break
                else:
                    ok = False
            except Exception as e:  # the upstream's failure must not reach the sender
                _log.warning("OTLPReceiver: forwarding to %s failed: %s", url, e)
                ok = False
            with self._store._cond:
                if ok:
                    self._store.stats.forwarded += 1
                else:
                    self._store.stats.forward_failures += 1

        task = asyncio.get_running_loop().create_task(send())
        self._forwards.add(task)
        task.add_done_callback(self._forwards.discard)


_MESSAGE = {"traces": "ExportTraceServiceRequest", "logs": "ExportLogsServiceRequest"}


def _success(signal: str, proto: bool, admission: Admission) -> bytes:
    if signal == "traces":
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

        response: Any = pb.ExportTraceServiceResponse()
        if admission.rejected:
            response.partial_success.rejected_spans = admission.rejected
            response.partial_success.error_message = admission.message
    else:
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as lpb

        response = lpb.ExportLogsServiceResponse()
        if admission.rejected:
            response.partial_success.rejected_log_records = admission.rejected
            response.partial_success.error_message = admission.message
    if proto:
        return bytes(response.SerializeToString())
    from google.protobuf.json_format import MessageToJson

    return str(MessageToJson(response, indent=None)).encode()
