"""End to end in Chromium, a dispute talked through and settled (issue 40): bob, one side of a
dispute on demo 10's stop, follows the Review page's link to the Disputes page, sees both answers
and says why; the lead opens Adjudicate and reads, beside both reviewers' answers, each one's
note and bob's comment in time order, asks a question in the thread (Ctrl+Enter there posts it
and settles nothing), settles it with a reason, and finds the reason at the end of the thread.
Screenshots at 1600x1000 under test-artifacts/dispute_*.png."""

from __future__ import annotations

import re

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from reviewing import WAIT, press, wait_checked
from test_disputes import BOB, NAME, disputed

pytestmark = pytest.mark.browser

ASKS = "ann, did you see e15 come back before the stop?"
SAYS = "e15 is the db_analyst's return: it came back before the stop, so the stop was in time"


def words_broken(box) -> list[str]:
    """The words of `box` that the page breaks across two lines though they would fit on one
    line of their column: only a word longer than its column may break inside. A word is a run
    of letters and digits: `stopping_correctness` may wrap after its `_`, not in `correctness`."""
    return box.evaluate("""(box) => {
        const broken = [], canvas = document.createElement('canvas').getContext('2d');
        const walk = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
        for (let node = walk.nextNode(); node; node = walk.nextNode()) {
            const cell = node.parentElement, style = getComputedStyle(cell);
            canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
            for (const m of node.data.matchAll(/[\\p{L}\\p{N}]+/gu)) {
                const range = document.createRange();
                range.setStart(node, m.index);
                range.setEnd(node, m.index + m[0].length);
                const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                if (lines.size > 1 && canvas.measureText(m[0]).width <= cell.clientWidth)
                    broken.push(m[0]);
            }
        }
        return broken;
    }""")


def test_a_reviewer_says_why_and_the_lead_settles_seeing_both_sides_and_the_thread(
        browsers, app_server, tmp_path):
    workspace = disputed(tmp_path)
    base = app_server(workspace)
    bob, lee = browsers(2, timeout=WAIT)
    # bob, done with the campaign, is pointed at the dispute he is one side of
    goto_as(bob, f"{base}/review?campaign={NAME}", "bob")
    wait_for_streamlit(bob, timeout=WAIT)
    bob.get_by_role("button", name=re.compile("Start")).click()
    wait_for_streamlit(bob, timeout=WAIT)
    bob.mouse.move(5, 5)  # off Start's place: the button there now has a tooltip over the link
    bob.get_by_text("You are one side of 1 open dispute", exact=False).click()
    wait_for_streamlit(bob, timeout=WAIT)
    assert "/disputes" in bob.url
    sides = bob.locator(".st-key-disputes-sides")
    for seen in ("ann", "bob", "premature", "correct"):
        assert sides.get_by_text(seen, exact=False).first.is_visible()
    box = bob.get_by_role("textbox", name=re.compile("Say why"))
    box.fill(SAYS)
    bob.get_by_role("button", name="Post comment").click()
    wait_for_streamlit(bob, timeout=WAIT)
    bob.locator(".st-key-disputes-thread").get_by_text(SAYS).wait_for()
    assert box.input_value() == ""  # posted, the box is empty again
    shot(bob, "dispute_01_reviewer_says_why")

    # the lead sees both sides and what was said, in time order, and settles
    goto_as(lee, f"{base}/adjudicate?campaign={NAME}", "lee")
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text("Disagreement 1 of 1").wait_for()
    answers = lee.locator(".st-key-adj-answers")
    for seen in ("ann", "bob", "premature", "correct"):
        assert answers.get_by_text(seen, exact=False).first.is_visible()
    assert words_broken(answers) == []  # "stopping_correctness" wraps after its "_"
    thread = lee.locator(".st-key-adj-thread")
    said = thread.inner_text()
    assert said.index("ann thinks premature") < said.index("bob thinks correct") \
        < said.index(SAYS)
    assert thread.get_by_text(SAYS).is_visible()
    shot(lee, "dispute_02_lead_sees_both_sides_and_the_thread")
    press(lee, "1")  # the first answer of the stop: correct
    wait_checked(lee, "correct")
    reason = lee.get_by_role("textbox", name=re.compile("Reason for the final answer"))
    reason.fill("bob is right: e15 returned before the stop")
    wait_for_streamlit(lee, timeout=WAIT)

    # Ctrl+Enter in the comment box posts the comment, and settles nothing
    box = lee.get_by_role("textbox", name=re.compile("Comment on this dispute"))
    box.fill(ASKS)
    box.press("Control+Enter")
    wait_for_streamlit(lee, timeout=WAIT)
    lee.locator(".st-key-adj-thread").get_by_text(ASKS).wait_for()
    assert not [x for x in workspace.labelling.current(campaign=NAME)
                if x.source == "adjudication"]

    reason = lee.get_by_role("textbox", name=re.compile("Reason for the final answer"))
    assert reason.input_value() == "bob is right: e15 returned before the stop"
    reason.press("Control+Enter")
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text("Saved the final answer", exact=False).wait_for()
    lee.get_by_text("show settled ones too").click()
    wait_for_streamlit(lee, timeout=WAIT)
    thread = lee.locator(".st-key-adj-thread")
    reason_shown = thread.get_by_text("bob is right: e15 returned before the stop")
    reason_shown.wait_for()
    reason_shown.scroll_into_view_if_needed()
    said = thread.inner_text()
    assert said.index(SAYS) < said.index(ASKS) < said.index("bob is right")
    shot(lee, "dispute_03_settled_with_its_reason")

    final = [x for x in workspace.labelling.current(campaign=NAME) if x.source == "adjudication"]
    assert [(x.question, x.value, x.comment) for x in final] == [
        ("stopping_correctness", "correct", "bob is right: e15 returned before the stop")]


def test_a_lead_hides_a_comment_then_shows_it_again_and_the_thread_keeps_both(
        browsers, app_server, tmp_path):
    """The lead hides bob's comment (a misreading: it looked like a remark about ann), then
    shows it again with why: the thread says under it who hid it and who showed it again, and
    bob reads his comment again on the Disputes page. Screenshots dispute_04, dispute_05."""
    workspace = disputed(tmp_path)
    (dispute,) = workspace.campaigns.disagreements(NAME)
    workspace.disputes.comment(NAME, dispute.trace_id, dispute.event_id, SAYS, BOB)
    base = app_server(workspace)
    lee, bob = browsers(2, timeout=WAIT)
    goto_as(lee, f"{base}/adjudicate?campaign={NAME}", "lee")
    wait_for_streamlit(lee, timeout=WAIT)
    thread = lee.locator(".st-key-adj-thread")
    thread.get_by_text(SAYS).wait_for()
    thread.get_by_role("button", name=re.compile(r"Hide$")).click()
    lee.get_by_role("textbox", name=re.compile("Why hide it")).fill("a remark about ann")
    lee.get_by_role("button", name=re.compile("Hide this comment")).click()
    wait_for_streamlit(lee, timeout=WAIT)
    thread.get_by_text("hidden by lee: a remark about ann", exact=False).wait_for()

    thread.get_by_role("button", name=re.compile(r"Show again$")).click()
    lee.get_by_role("textbox", name=re.compile("Why show it again")).fill(
        "misread: it is about e15")
    lee.get_by_role("button", name=re.compile("Show this comment again")).click()
    wait_for_streamlit(lee, timeout=WAIT)
    thread.get_by_text("shown again by lee: misread: it is about e15", exact=False).wait_for()
    said = thread.inner_text()
    assert said.index("hidden by lee: a remark about ann") < said.index("shown again by lee")
    assert thread.get_by_text(SAYS).is_visible()  # its text, no longer folded
    shot(lee, "dispute_04_lead_showed_a_comment_again")

    goto_as(bob, f"{base}/disputes", "bob")
    wait_for_streamlit(bob, timeout=WAIT)
    bob_thread = bob.locator(".st-key-disputes-thread")
    bob_thread.get_by_text(SAYS).wait_for()
    assert "shown again by lee" in bob_thread.inner_text()
    shot(bob, "dispute_05_reviewer_reads_it_again")
