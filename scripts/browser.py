"""Opening `nsysgen analyze`'s report.html in a real headless browser: Debian's chromium, driven
by Playwright (PyPI) through its executable_path, since Playwright's own browser download cannot
be reached here. Every request the page makes is routed: the report's own file and data: URLs
load, anything else is aborted and recorded (the report must work offline).

    from scripts.browser import open_report
    seconds, size = open_report(Path("OUT/report.html"))  # the time to the load event, bytes

bench/ may import it from the repository root (helper scripts run with it on sys.path).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

# Debian's package; NSYSGEN_CHROMIUM names another build.
CHROMIUM = os.environ.get("NSYSGEN_CHROMIUM", "/usr/bin/chromium")


def chromium() -> str | None:
    """The browser's path, or None when it is not installed (the tests say how to get it)."""
    found = shutil.which(CHROMIUM) or (CHROMIUM if Path(CHROMIUM).is_file() else None)
    try:
        import playwright  # noqa: F401
    except ImportError:
        return None
    return found


@dataclass
class Opened:
    """What a reader of the report sees, and what the page did."""

    seconds: float  # from navigation to the load event
    size: int  # the report's bytes
    text: str  # the page's visible text
    headings: list[str]  # h1..h3, in order
    verdict: str  # the verdict's first sentence
    regression: str  # the comparison's verdict ("" without a baseline)
    rows: list[str]  # every table row's text, its cells joined by tabs
    errors: list[str] = field(default_factory=list)  # console errors and page exceptions
    blocked: list[str] = field(default_factory=list)  # requests to anything but the report


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=chromium() or CHROMIUM)
        try:
            yield launched
        finally:
            launched.close()


def inspect(path: Path, screenshot: Path | None = None, width: int = 1200) -> Opened:
    """Open `path` as a reader would (a file: URL), optionally saving a full-page screenshot."""
    path = path.resolve()
    url = path.as_uri()
    errors: list[str] = []
    blocked: list[str] = []

    def route(request_route: Any) -> None:
        requested = request_route.request.url
        if requested == url or requested.startswith("data:"):
            request_route.continue_()
        else:
            blocked.append(requested)
            request_route.abort()

    with browser() as launched:
        page = launched.new_page(viewport={"width": width, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", partial(_dialog, errors))
        page.route("**/*", route)
        start = time.perf_counter()
        page.goto(url, wait_until="load")
        seconds = time.perf_counter() - start
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
        text = page.inner_text("body")
        headings = [h.strip() for h in page.locator("h1, h2, h3").all_inner_texts()]
        verdict, regression = (_text(page, f"#{key}-headline") for key in ("verdict", "regression"))
        rows = [row.strip() for row in page.locator("tr").all_inner_texts()]
    size = path.stat().st_size
    return Opened(seconds, size, text, headings, verdict, regression, rows, errors, blocked)


def _dialog(errors: list[str], dialog: Any) -> None:
    """A script ran (alert, confirm): recorded as an error, and dismissed."""
    errors.append(f"dialog: {dialog.message}")
    dialog.dismiss()


def _text(page: Any, selector: str) -> str:
    found = page.locator(selector)
    return str(found.inner_text()) if found.count() else ""


def open_report(path: Path) -> tuple[float, int]:
    """The seconds a headless chromium takes to open the report (to its load event) and its
    size in bytes."""
    opened = inspect(path)
    return opened.seconds, opened.size
