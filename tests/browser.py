"""What the browser tests share: a page that collects CSP violations, console and script
errors (``Watched``), logging in, waiting until htmx runs, and waiting for a condition."""

from __future__ import annotations

import time
from collections.abc import Callable

from playwright.sync_api import Browser, Page, expect

from tests.conftest import wait_until_true

FOCUSED = "document.activeElement && document.activeElement.id"  # the focused element's id


def log_in(page: Page, base: str, username: str) -> None:
    page.goto(base + "/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_be_visible()


def wait_for(page: Page, condition: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    """Wait for ``condition()`` while Playwright handles the page's events and routes (a
    plain sleep would hold its event loop, and with it every dialog and routed request)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        page.wait_for_timeout(50)


def log_in_as_owner(page: Page, base: str) -> None:
    """The researcher ``owner`` (the cast's) logged in, on the home page."""
    log_in(page, base, "owner")
    expect(page.locator("h1")).to_have_text("Your studies")


def ready(page: Page) -> None:
    """Wait until the page has loaded and htmx (a deferred script) is running."""
    wait_until_true(page, "typeof htmx === 'object' && document.readyState === 'complete'")


WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(
  `${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`));
"""


class Watched:
    """A page whose CSP violations, console errors and script errors are all collected."""

    def __init__(self, browser: Browser, base: str) -> None:
        self.base, self.problems, self.visited = base, [], 0  # type: ignore[var-annotated]
        self.page: Page = browser.new_page()
        self.page.add_init_script(WATCH)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.problems.append(f"script error: {exc}"))
        self.page.on("response", self._response)

    def _console(self, message) -> None:  # type: ignore[no-untyped-def]
        # A failed load is reported by _response, with its address.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.problems.append(f"console: {message.text}")

    def _response(self, response) -> None:  # type: ignore[no-untyped-def]
        # Chromium asks for /favicon.ico on its own; the lockout page answers 429 on purpose.
        expected = response.url.endswith("/favicon.ico") or (
            response.status == 429 and response.url.endswith("/login/")
        )
        if response.status >= 400 and not expected:
            self.problems.append(f"{response.status} for {response.url}")

    def open(self, path: str, status: int = 200) -> None:
        self.collect()
        response = self.page.goto(self.base + path)
        assert response is not None and response.status == status, (path, response)
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, (path, policy)
        self.page.wait_for_load_state("load")
        if not path.startswith(("/admin/", "/api/")):  # pages of their own, without htmx
            wait_until_true(self.page, "typeof htmx === 'object'")
        self.visited += 1

    def log_in(self, username: str, path: str = "/login/") -> None:
        self.open(path)
        self.page.fill("input[name=username]", username)
        self.page.fill("input[name=password]", "pw")
        self.page.click("[type=submit]")
        self.page.wait_for_load_state("load")

    def settled(self) -> None:
        """Wait until htmx has finished settling a swap: the swapped-in elements get their
        htmx listeners only in the settle step (a few ms after the new DOM appears), so a
        change made in that window would be lost."""
        wait_until_true(
            self.page, "!document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')"
        )

    def collect(self) -> list[str]:
        """Violations seen by the current document so far (each document starts afresh)."""
        try:
            seen = self.page.evaluate("window.__violations || []")
        except Exception:  # between two documents
            seen = []
        for v in seen:
            if v not in self.problems:
                self.problems.append(v)
        return self.problems
