"""A tiny Chrome DevTools Protocol client over ``--remote-debugging-pipe``: headless Chromium driven with
the standard library only (no websocket, no Playwright). Test helper, does I/O.

The browser reads commands on its fd 3 and writes replies and events on its fd 4, each a JSON message
ended by a NUL byte. :class:`Chromium` opens one page, loads a URL, collects console errors, uncaught
exceptions, log errors and every network request, evaluates expressions and takes full-page screenshots.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "Chromium", "find_chromium"]

# the flags a closed network needs (no background connections, no component updates, no sync)
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = find_chromium()


class CdpError(RuntimeError):
    pass


class Chromium:
    """One headless browser with one page. Use as a context manager."""

    def __init__(self, executable: str, *, width: int = 1200, height: int = 900, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="syncdoctor-chromium-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # move the browser's ends above 9 so that the shell redirections below cannot clobber them
        child_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        child_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        os.close(to_browser_r)
        os.close(from_browser_w)
        args = [*FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"]
        # a Python trampoline puts the pipe ends on fds 3 and 4 (sh cannot redirect fds above 9), then execs
        trampoline = ("import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
                      "os.close(int(sys.argv[1])); os.close(int(sys.argv[2])); os.execv(sys.argv[3], sys.argv[3:])")
        self.log_path = Path(tempfile.mkstemp(prefix="syncdoctor-chromium-", suffix=".log")[1])
        with self.log_path.open("wb") as log:  # a file, not a pipe: chromium logs a lot and must never block
            self.process = subprocess.Popen(
                [sys.executable, "-c", trampoline, str(child_r), str(child_w), executable, *args],
                pass_fds=(child_r, child_w),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            )
        os.close(child_r)
        os.close(child_w)
        self._out = to_browser_w
        self._in = from_browser_r
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    # --- protocol --------------------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("timed out waiting for the browser")
            ready, _, _ = select.select([self._in], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise CdpError(f"the browser closed its pipe (exit {self.process.poll()}): {self._stderr()}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        """Send one command and wait for its reply; events that arrive meanwhile are kept in ``events``."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout_s: float | None = None) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while True:
            message = self._read_message(deadline)
            if "method" in message:
                self.events.append(message)
                if message["method"] == method:
                    return message

    # --- page ------------------------------------------------------------------------------------------
    def open_page(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def load(self, url: str) -> None:
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.send("Emulation.clearDeviceMetricsOverride")  # the last screenshot's tall viewport
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise CdpError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and error log entries seen so far."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
                out.append(f"console.{params['type']}: {[a.get('value') for a in params.get('args', [])]}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
                entry = params["entry"]
                out.append(f"log {entry.get('level')}: {entry.get('text')} {entry.get('url', '')}")
        return out

    def requests(self) -> list[str]:
        """URLs of every request the page made (the document itself included)."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page (the viewport stretched to the content height)."""
        metrics = self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics.get("contentSize")
        height = max(self.height, min(int(size["height"]) + 1, 16000))
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    # --- lifetime --------------------------------------------------------------------------------------
    def _stderr(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                try:
                    self.send("Browser.close", session=False)
                except (CdpError, OSError):
                    pass
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=10)
        finally:
            for fd in (self._out, self._in):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.log_path.unlink(missing_ok=True)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        self.open_page()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
