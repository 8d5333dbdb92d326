"""The dashboard tests' browser page: a fresh headless Chromium per test (dashboard_support)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from dashboard_support import browser_page
from playwright.async_api import Page


@pytest.fixture
async def page() -> AsyncIterator[Page]:
    async with browser_page() as opened:
        yield opened
