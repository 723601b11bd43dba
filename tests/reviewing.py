"""A reviewer's keyboard path through the Review page in Chromium, shared by the end-to-end
tests that walk it (a campaign, a week, suggestions): a key pressed on the page, an answer
seen checked, the target on screen, the Start and the save that brings the next target.
The browser contexts, one a person, come from conftest's `browsers` fixture."""

from __future__ import annotations

import time

from conftest import wait_for_streamlit

WAIT = 120_000
"""ms: two cores shared by many processes can be slow to run a page."""


def press(page, key: str, quiet_ms: int = 300) -> None:
    """A key pressed with the focus on the page itself, then the run it starts."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=quiet_ms)


def wait_checked(page, label: str) -> None:
    """Wait until the answer `label` shows checked (a loaded machine may start the run late)."""
    page.wait_for_function(
        """(label) => [...document.querySelectorAll(
                '.st-key-ann-form [data-testid="stRadioOption"]')]
            .some(o => o.innerText.includes(label) && o.querySelector('input').checked)""",
        arg=label, timeout=WAIT)


def target_text(page) -> str:
    """The words of the target on screen ('' when none is)."""
    box = page.locator(".st-key-review-target")
    return box.inner_text() if box.count() else ""


def start(page) -> None:
    """Ctrl+Enter on the campaign's Start, until its first target is on screen."""
    page.get_by_role("button", name="Start", exact=False).wait_for(timeout=WAIT)
    press(page, "Control+Enter")
    page.locator(".st-key-review-target").wait_for(timeout=WAIT)


def wait_for_next(page, before: str, timeout: float = WAIT) -> None:
    """Wait until another target than `before`, or the done message, is on screen, and the run
    that drew it has ended."""
    page.wait_for_function(
        """(before) => {
            const box = document.querySelector('.st-key-review-target');
            if (box) return box.innerText !== before;
            return /nothing is left for you/.test(document.body.innerText);
        }""", arg=before, timeout=timeout, polling="raf")
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)


def save(page, before: str | None = None) -> float:
    """Ctrl+Enter, and the seconds until another target than `before` (the one on screen when
    not given) or the done message is on screen."""
    before = target_text(page) if before is None else before
    page.evaluate("document.activeElement && document.activeElement.blur()")
    began = time.perf_counter()
    page.keyboard.press("Control+Enter")
    wait_for_next(page, before)
    return time.perf_counter() - began
