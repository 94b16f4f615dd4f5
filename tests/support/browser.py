"""Headless Chromium driven through its DevTools protocol (CDP), for the browser tests.

A tiny CDP client over aiohttp's websocket client (aiohttp comes with
textual-serve): launch Debian's ``chromium`` headless with
``--remote-debugging-port=0``, attach to its page, open a URL, read what the
terminal in the page shows, press keys as a person would, take a PNG.

The page of ``jobtui serve`` draws the console with xterm.js on a canvas, so
its text is not in the DOM. Before the page's scripts run, a hook records the
xterm ``Terminal`` the page creates (the first object given a ``terminal``
property that looks like one); the screen text is then read from that
terminal's buffer: what the browser has drawn, not the bytes on the wire.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")

HOOK = """
(() => {
  Object.defineProperty(Object.prototype, "terminal", {
    configurable: true,
    set(value) {
      if (value && typeof value.loadAddon === "function" && !window.__jobtuiTerm) {
        window.__jobtuiTerm = value;
      }
      Object.defineProperty(this, "terminal", {
        value, writable: true, configurable: true, enumerable: true,
      });
    },
  });
})();
"""

SCREEN = """
(() => {
  const term = window.__jobtuiTerm;
  if (!term) return null;
  const buffer = term.buffer.active, lines = [];
  for (let y = 0; y < term.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    lines.push(line ? line.translateToString(true) : "");
  }
  return lines.join("\\n");
})()
"""

# Input.dispatchKeyEvent fields of the keys the tests press.
KEYS: dict[str, dict[str, Any]] = {
    "ArrowDown": {"key": "ArrowDown", "code": "ArrowDown", "windowsVirtualKeyCode": 40},
    "ArrowUp": {"key": "ArrowUp", "code": "ArrowUp", "windowsVirtualKeyCode": 38},
    "Escape": {"key": "Escape", "code": "Escape", "windowsVirtualKeyCode": 27},
    "Enter": {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"},
}


def find_chromium() -> str | None:
    for name in CANDIDATES:
        if path := shutil.which(name):
            return path
    return None


def require_chromium() -> str:
    """Chromium's path; skipped without it, failed when CI is set (``.ci/run`` installs it)."""
    path = find_chromium()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set, so the browser tests must run: install chromium")
        pytest.skip("chromium is not installed")
    return path


class CDPError(RuntimeError):
    """Chromium answered a command with an error, or did not start."""


class Chromium:
    """One headless Chromium with one page, driven over CDP. Use ``async with``."""

    def __init__(self, *, width: int = 1280, height: int = 800, binary: str | None = None):
        self.width = width
        self.height = height
        self.binary = binary or require_chromium()
        self._profile = tempfile.TemporaryDirectory(prefix="jobtui-chromium-")
        self._proc: subprocess.Popen[bytes] | None = None
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._ids = itertools.count(1)

    async def __aenter__(self) -> Chromium:
        profile = Path(self._profile.name)
        self._log = (profile / "chromium.log").open("wb")
        self._proc = subprocess.Popen(
            [
                self.binary,
                "--headless",
                "--no-sandbox",  # root in CI; the page is our own, on loopback
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--window-size={self.width},{self.height}",
                "about:blank",
            ],
            stdout=self._log,
            stderr=self._log,
            start_new_session=True,
        )
        try:
            port = await self._devtools_port(profile / "DevToolsActivePort")
            self._http = aiohttp.ClientSession()
            async with self._http.get(f"http://127.0.0.1:{port}/json/list") as response:
                targets = await response.json()
            page = next(t for t in targets if t.get("type") == "page")
            self._ws = await self._http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
            await self.send("Page.enable")
            await self.send("Runtime.enable")
            await self.send(
                "Emulation.setDeviceMetricsOverride",
                width=self.width,
                height=self.height,
                deviceScaleFactor=1,
                mobile=False,
            )
            await self.send("Page.addScriptToEvaluateOnNewDocument", source=HOOK)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._http is not None:
            await self._http.close()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        self._log.close()
        self._profile.cleanup()

    async def _devtools_port(self, path: Path, timeout: float = 30.0) -> int:
        """Chromium writes the port it picked into its profile once it listens."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise CDPError(f"chromium exited with {self._proc.returncode}: {self.log()}")
            if path.exists() and (first := path.read_text().split("\n", 1)[0].strip()):
                return int(first)
            await asyncio.sleep(0.1)
        raise CDPError(f"chromium did not open its DevTools port in {timeout} s: {self.log()}")

    def log(self) -> str:
        self._log.flush()
        return (Path(self._profile.name) / "chromium.log").read_text(errors="replace")[-2000:]

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one CDP command and return its result (events in between are dropped)."""
        assert self._ws is not None
        call_id = next(self._ids)
        await self._ws.send_json({"id": call_id, "method": method, "params": params})
        while True:
            message = await asyncio.wait_for(self._ws.receive(), 60)
            if message.type != aiohttp.WSMsgType.TEXT:
                raise CDPError(f"{method}: the DevTools connection closed ({message.type})")
            data = message.json()
            if data.get("id") != call_id:
                continue
            if "error" in data:
                raise CDPError(f"{method}: {data['error']}")
            result: dict[str, Any] = data.get("result", {})
            return result

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise CDPError(f"{expression[:60]!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def screen(self) -> str:
        """The text the page's terminal shows now ("" before it exists)."""
        return await self.evaluate(SCREEN) or ""

    async def wait_for_screen(self, *words: str, timeout: float = 60.0) -> str:
        """Wait until the terminal shows every one of ``words``; return the screen."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = await self.screen()
            if all(word in text for word in words):
                return text
            await asyncio.sleep(0.2)
        raise AssertionError(f"the page never showed {words} in {timeout} s; it shows:\n{text}")

    async def focus(self) -> None:
        """Give the page's terminal the keyboard focus, as a click or Tab into it would."""
        await self.evaluate("window.__jobtuiTerm && window.__jobtuiTerm.focus()")

    async def press(self, key: str) -> None:
        """Press and release one key in the page's terminal (a letter, or a KEYS name)."""
        await self.focus()
        if key in KEYS:
            fields = KEYS[key]
        elif len(key) == 1:
            fields = {
                "key": key,
                "text": key,
                "code": f"Key{key.upper()}" if key.isalpha() else "",
                "windowsVirtualKeyCode": ord(key.upper()),
            }
        else:
            raise ValueError(f"no key {key!r}: one character or one of {sorted(KEYS)}")
        await self.send("Input.dispatchKeyEvent", type="keyDown", **fields)
        up = {k: v for k, v in fields.items() if k != "text"}
        await self.send("Input.dispatchKeyEvent", type="keyUp", **up)

    async def screenshot(self, path: Path) -> Path:
        """Save what the page shows as a PNG."""
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
