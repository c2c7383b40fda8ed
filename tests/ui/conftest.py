"""Headless Chromium for the console tests: Debian's ``chromium`` driven by Playwright for Python.

Playwright's own browser download is never used (``executable_path``); the tests skip when the
``playwright`` package or the chromium binary is not installed (scripts/install-test-deps.sh
installs chromium, the ``test`` extra installs playwright).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
SCREENSHOT_DIR_ENV = "LAKEKEEPER_UI_SCREENSHOT_DIR"  # e.g. docs/screenshots to refresh the committed ones


def chromium_path() -> str | None:
    for candidate in (os.environ.get("LAKEKEEPER_CHROMIUM"), *CHROMIUM_CANDIDATES, shutil.which("chromium")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


# Module scope, not session: while Playwright's sync API runs, asyncio sees a running event loop in
# the main thread, so every later pytest-asyncio test would fail with "Runner.run() cannot be called
# from a running event loop". The browser must be gone before the next module's tests start.
@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python package) is not installed")
    executable = chromium_path()
    if executable is None:
        pytest.skip("chromium is not installed (apt-get install chromium; scripts/install-test-deps.sh)")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, headless=True,
                                              args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield instance
        instance.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60000)  # a loaded 2-core machine; a passing step takes well under 1 s
    # the console's confirmations ("Drop table …? It stays restorable …"): accepted unless a test says
    # otherwise (page.dialogs["accept"]); every question asked is kept in page.dialogs["asked"]
    page.dialogs = {"accept": True, "asked": []}

    def answer(dialog):
        page.dialogs["asked"].append(dialog.message)
        dialog.accept() if page.dialogs["accept"] else dialog.dismiss()

    page.on("dialog", answer)
    yield page
    context.close()


@pytest.fixture
def screenshot(tmp_path):
    """``screenshot(page, name)``: a full-page PNG in tmp_path, or in $LAKEKEEPER_UI_SCREENSHOT_DIR."""
    target = Path(os.environ.get(SCREENSHOT_DIR_ENV) or tmp_path)
    target.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = target / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture(scope="session")
def backend_server(lakekeeper_server):
    """The run's shared server of each backend (lakekeeper-testing's ``lakekeeper_server``): embedded
    (SQLite, with the quickstart's ``demo`` warehouse) or on PostgreSQL; the console tests that use it
    make warehouses of their own."""
    return lakekeeper_server


@pytest.fixture(scope="session")
def server(lakekeeper_server_factory):
    """The console tests' embedded server (the quickstart's ``demo`` warehouse), one for every module
    here: the tests change it, each under names of its own (warehouses, projects, namespaces, roles),
    and find ``demo`` by its name (``demo_warehouse_id``)."""
    server = lakekeeper_server_factory()
    yield server
    server.close()


@pytest.fixture(scope="session")
def demo_warehouse_id(server) -> str:
    """The id of the quickstart's ``demo`` warehouse (other modules add warehouses next to it)."""
    listed = httpx.get(server.url + "/management/v1/warehouse", timeout=30).json()["warehouses"]
    return next(w["warehouse-id"] for w in listed if w["name"] == "demo")


@pytest.fixture
def console(server):
    """An HTTP client of the console (no cookies yet)."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
