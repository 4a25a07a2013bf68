"""Headless Chromium driven over the DevTools protocol (loopback only), for tests and benchmarks
that check what a page renders after its scripts ran."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

__all__ = ["Browser", "chromium"]


def chromium() -> str | None:
    """The Chromium binary (Debian's `chromium` package), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    """`with Browser() as b: b.open(url); b.evaluate("document.title")`."""

    def __init__(self, width: int = 1280, height: int = 900) -> None:
        binary = chromium()
        if binary is None:
            raise RuntimeError("chromium is not installed (apt-get install chromium)")
        self._profile = tempfile.TemporaryDirectory(prefix="tg-chromium-")
        self._proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={self._profile.name}", f"--window-size={width},{height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._loop = asyncio.new_event_loop()
        self._ids = 0
        self.exceptions: list[str] = []
        self.events: list[dict[str, Any]] = []
        self._loop.run_until_complete(self._connect(Path(self._profile.name) / "DevToolsActivePort"))

    async def _connect(self, port_file: Path) -> None:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        self._http = aiohttp.ClientSession()
        async with self._http.get(f"http://127.0.0.1:{port}/json/list") as resp:
            targets = await resp.json()
        page = next(t for t in targets if t["type"] == "page")
        self._ws = await self._http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self._call("Page.enable")
        await self._call("Runtime.enable")

    async def _call(self, method: str, **params: Any) -> dict[str, Any]:
        self._ids += 1
        mine = self._ids
        await self._ws.send_str(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            msg = json.loads((await self._ws.receive(timeout=60)).data)
            if msg.get("id") == mine:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]  # type: ignore[no-any-return]
            self._event(msg)

    def _event(self, msg: dict[str, Any]) -> None:
        self.events.append(msg)
        if msg.get("method") == "Runtime.exceptionThrown":
            self.exceptions.append(json.dumps(msg["params"]["exceptionDetails"])[:2000])

    async def _open(self, url: str) -> float:
        start = time.perf_counter()
        self.events.clear()
        await self._call("Page.navigate", url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self._event(json.loads((await self._ws.receive(timeout=60)).data))
        return time.perf_counter() - start

    def open(self, url: str) -> float:
        """Navigate and wait for the load event (scripts have run); the seconds it took."""
        return self._loop.run_until_complete(self._open(url))

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page (exceptions raise)."""
        result = self._loop.run_until_complete(
            self._call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self._loop.run_until_complete(
            self._call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        )
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    def close(self) -> None:
        async def shutdown() -> None:
            await self._ws.close()
            await self._http.close()

        try:
            self._loop.run_until_complete(shutdown())
        finally:
            self._loop.close()
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
