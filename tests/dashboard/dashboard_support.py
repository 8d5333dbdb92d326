"""Helpers for the dashboard's tests: a real headless Chromium and screenshots.

The browser is Debian's chromium driven by Playwright (``make install`` installs chromium; the
pinned playwright package never downloads a browser of its own). Screenshots of each page at
1440×900 go to build/screenshots/; with TRAINYARD_SCREENSHOTS=docs/screenshots they refresh the README's copies.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from playwright.async_api import Page, async_playwright

__all__ = ["browser_page", "screenshot"]

CHROMIUM = Path("/usr/bin/chromium")
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
# A test run writes its screenshots under build/ (ignored by git); the README's copies in
# docs/screenshots are refreshed on purpose: TRAINYARD_SCREENSHOTS=docs/screenshots .venv/bin/pytest tests/dashboard
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / os.environ.get("TRAINYARD_SCREENSHOTS", "build/screenshots")
VIEWPORT = {"width": 1440, "height": 900}


@contextlib.asynccontextmanager
async def browser_page() -> AsyncIterator[Page]:
    assert CHROMIUM.is_file(), f"{CHROMIUM} is missing: `make install` installs Debian's chromium"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport=VIEWPORT)
            page = await context.new_page()
            page.set_default_timeout(20_000)
            yield page
            await context.close()
        finally:
            await browser.close()


async def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    await page.screenshot(path=str(path))
    return path
