"""A real browser for the tests: Debian's headless Chromium driven by playwright's Python package.

Nothing here downloads a browser build: playwright launches `/usr/bin/chromium` (`.ci/run`
installs it with apt-get). Where that browser is missing the browser tests skip with a message
saying how to get it, except under CI (`CI=true`), where a missing browser fails them: CI must
never pass by skipping. axe-core comes from the npm registry into `.data/npm` (gitignored) the
first time a test asks for it; screenshots go to `.data/screenshots` for a person to look at.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
# What this machine's closed network needs (no background fetches, no QUIC, no first-run or
# component updates); playwright adds a new empty --user-data-dir of its own for each launch.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AXE_VERSION = "4.14.1"
AXE_DIR = ROOT / ".data" / "npm"
SCREENSHOTS = ROOT / ".data" / "screenshots"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the browser tests, but {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason} (`apt-get install chromium` as .ci/run does)")


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing")
    return CHROMIUM


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser(chromium: Path) -> AsyncIterator[Any]:
    """One headless Chromium for the session; each test opens its own context (see `context`)."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:  # pragma: no cover - the dev extras install it
        _unavailable("playwright is not installed (`make install`)")
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        await chromium.close()


@pytest_asyncio.fixture
async def context(browser: Any) -> AsyncIterator[Any]:
    """A fresh browser profile for one test (no cookies, cache or storage from another)."""
    ctx = await browser.new_context()
    yield ctx
    await ctx.close()


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's script, installed from the npm registry once per machine, pinned."""
    npm_install(AXE_DIR, {"axe-core": AXE_VERSION})
    return (AXE_DIR / "node_modules" / "axe-core" / "axe.min.js").read_text()


def npm_install(prefix: Path, packages: dict[str, str]) -> None:
    """Install these pinned npm packages under prefix unless they are there already; under a
    lock, as parallel test processes may ask at once. Without npm, skip (fail under CI)."""
    prefix.mkdir(parents=True, exist_ok=True)
    with (prefix / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        manifests = {prefix / "node_modules" / name / "package.json": v for name, v in packages.items()}
        if all(path.exists() and f'"version": "{v}"' in path.read_text() for path, v in manifests.items()):
            return
        npm = shutil.which("npm")
        if npm is None:
            reason = f"npm is missing, so {', '.join(packages)} cannot be installed"
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI must run every test, but {reason}", pytrace=False)
            pytest.skip(reason)
        subprocess.run(
            [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(prefix)]
            + [f"{name}@{version}" for name, version in packages.items()],
            check=True,
            capture_output=True,
            timeout=300,
        )


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def read_qr_codes(png: bytes) -> list[str]:
    """The QR codes in a screenshot, read by zxing-cpp (PyAV decodes the PNG to grey pixels)."""
    import io

    import av
    import zxingcpp

    with av.open(io.BytesIO(png), format="png_pipe") as container:
        frame = next(container.decode(video=0)).reformat(format="gray")
    plane, width, height = frame.planes[0], frame.width, frame.height
    raw = bytes(plane)
    pixels = b"".join(raw[row * plane.line_size : row * plane.line_size + width] for row in range(height))
    found = zxingcpp.read_barcodes(memoryview(pixels).cast("B", shape=[height, width]))
    return [code.text for code in found if code.format == zxingcpp.BarcodeFormat.QRCode]
