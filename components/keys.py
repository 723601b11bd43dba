"""Every key of orchviz's pages: what it does, on which page, and who binds it. The one key map.

Each binding reads its key from here: the Streamlit button shortcuts of the labels panel, the
review, adjudication and presentation pages (`shortcut(action)`), and the page's key script
(`components/static/keyboard.js`, handed `script_keys()` as JSON). Each help text is made here
too: the labels panel's and the review page's lists of keys (`help_table(page)`), and the table
in docs/labels.md, which a test holds equal to `help_table("trace")`. The letters a tag may take
are those no key of a labelling page binds (`tag_free`). `conflicts()` names two actions that
share a key on one page (a test holds it empty).

Pure: no Streamlit, so the tests and the docs read it as the pages do.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from string import ascii_uppercase
from typing import Literal

Page = Literal["trace", "review-start", "review", "review-skip", "review-switch", "adjudicate",
               "group", "present"]
"""Where a key works: the trace page's labels panel, the review page's steps (before Start, at a
target, choosing why to skip, after the reviewer's name changed), the adjudication page, the
group page (a trainer's siblings of one prompt), and presentation mode. A page of several steps
has one per step: only one step's keys are live."""

FORM: tuple[Page, ...] = ("trace", "review", "adjudicate", "group")
"""The pages that draw a target's form (`components.annotation`), with its keys."""
EVERY: tuple[Page, ...] = ("trace", "review-start", "review", "review-skip", "review-switch",
                           "adjudicate", "group", "present")

STREAMLIT_LETTERS = "CR"
"""Letters Streamlit keeps for itself (clear the cache, rerun), which no key of ours takes."""


@dataclass(frozen=True)
class Key:
    """One key: what it does and where."""

    action: str
    """The name a binding asks for it by (`shortcut("next-target")`)."""
    press: str
    """The key as Streamlit's `shortcut=` spells it ("N", "Shift+N", "Ctrl+Enter", "Up"), or a
    family: "1-9" (Alt+1-9) one key per answer, "A-Z" a letter per tag."""
    what: str
    """What it does, as the help tables say it."""
    pages: tuple[Page, ...]
    shown: str = ""
    """The key as the help tables write it (default: `press`)."""
    row: str = ""
    """The action whose help row this key is written in (default: a row of its own)."""
    by: Literal["streamlit", "script", "both"] = "streamlit"
    """Who binds it: a Streamlit button shortcut, the page's key script, or both (the script
    acts in the browser at once, the button through the server)."""
    typing: bool = False
    """A key for while the focus is in a text box (all other keys then type)."""

    @property
    def family(self) -> bool:
        """Whether it is a family of keys ("1-9", "Alt+1-9", "1-3", "A-Z"), not one key."""
        return bool(_FAMILY.search(self.press))

    def presses(self) -> list[str]:
        """The single keys it takes (a family of digits spelled out; tags: every letter)."""
        if self.press == "A-Z":
            return [f"tag letter {c}" for c in ascii_uppercase]
        if self.family:
            first, last = int(self.press[-3]), int(self.press[-1])
            return [f"{self.press[:-3]}{d}" for d in range(first, last + 1)]
        return [self.press]


_FAMILY = re.compile(r"(\d-\d|A-Z)$")


KEYS: tuple[Key, ...] = (
    # the form of a target: the labels panel, the review page, the adjudication page
    Key("pick", "1-9", "pick the n-th answer of the target's first scale or category question "
        "(each answer shows its digit)", FORM, shown="1 – 9", by="both"),
    Key("pick-second", "Alt+1-9", "pick the n-th answer of its second such question", FORM,
        shown="Alt+1 – 9", by="both"),
    Key("tag", "A-Z", "toggle a tag (each tag shows its letter; {reserved} are never a tag's)",
        FORM, shown="a letter", by="both"),
    Key("save", "Ctrl+Enter", "save the target's answers, wherever the focus is (an answer, a "
        "tag, the note box)", FORM, by="both"),
    Key("save-too", "Ctrl+S", "save too, also right after a click on an answer or a tag "
        "(which keeps Enter to itself)", FORM, by="both"),
    Key("walk-earlier", "Up", "at a stop: walk the cursor ▶ over the events around it (their "
        "content shows below the list); Enter makes the event under it the \"should have "
        "stopped here\" answer", FORM, shown="↑ / ↓, Enter"),
    Key("walk-later", "Down", "", FORM, row="walk-earlier"),
    Key("walk-pick", "Enter", "", FORM, row="walk-earlier"),
    Key("correct", "W", "write the correction: the focus goes to its first field (Tab moves "
        "on; save as above)", FORM, by="script"),
    # the labels panel's moves
    Key("next-target", "N", "the next target you have not labelled (never the one you are on) "
        "/ the target before", ("trace",), shown="N / P"),
    Key("previous-target", "P", "", ("trace",), row="next-target"),
    Key("skip-target", "S", "skip: the target comes back after the others", ("trace",)),
    Key("next-trace", "Shift+N", "the next trace of the library with a target you have not "
        "labelled", ("trace",)),
    Key("keys", "H", "this list of keys", ("trace", "review"), shown="? or H"),
    Key("keys-question", "?", "", ("trace", "review"), row="keys", by="script"),
    # the review page's steps
    Key("review-start", "Ctrl+Enter", "before the first target: Start (reserve the next target "
        "and show it); at a target, a save shows the next one", ("review-start",)),
    Key("review-skip", "S", "skip this target: then 1 – 3 pick a reason, or type one and press "
        "Enter; Esc goes back", ("review",), by="both"),
    Key("skip-reason", "1-3", "", ("review-skip",), row="review-skip", shown="1 – 3",
        by="both"),
    Key("skip-back", "Esc", "", ("review-skip",), row="review-skip", by="both"),
    Key("review-back", "P", "go back to the target you saved before (again: the one before "
        "it) and change your answer, saved as a new one / forward again, to the target you "
        "hold", ("review",), shown="P / N"),
    Key("review-forward", "N", "", ("review",), row="review-back"),
    Key("many-all", "Shift+A", "give this answer to every other target of its kind open to "
        "you in this trace (again: to none; the campaign's other traces have a button of "
        "their own); saving saves one label on each",
        ("review",)),
    Key("keep-name", "Esc", "after the name in the Reviewer box changed: keep reviewing as "
        "before, with the target you hold", ("review-switch",)),
    # the group page: a trainer's siblings of one prompt, labelled one after another, two judged
    Key("group-next", "N", "the next sibling (saving moves on too) / the one before", ("group",),
        shown="N / P"),
    Key("group-previous", "P", "", ("group",), row="group-next"),
    Key("pair-a", "Shift+A", "of the two siblings chosen, A is better / B is / a tie",
        ("group",), shown="Shift+A / Shift+B / Shift+T"),
    Key("pair-b", "Shift+B", "", ("group",), row="pair-a"),
    Key("pair-tie", "Shift+T", "", ("group",), row="pair-a"),
    # the adjudication page and presentation mode
    Key("adjudicate-next", "N", "the next disputed target / the one before", ("adjudicate",),
        shown="N / P"),
    Key("adjudicate-previous", "P", "", ("adjudicate",), row="adjudicate-next"),
    Key("present-previous", "Left", "the bookmark before / the next one", ("present",),
        shown="← / →"),
    Key("present-next", "Right", "", ("present",), row="present-previous"),
    # in a text box, on every page
    Key("name-done", "Enter", "keep the name; the next keys label", EVERY,
        shown="Enter in the Reviewer box", by="script", typing=True),
    Key("leave-box", "Esc", "leave the box; the next keys label", EVERY,
        shown="Esc in a text box", by="script", typing=True),
)

TYPING_NOTE = "Keys without Ctrl do nothing while you type in a text box (the panel says so then)."

_BY_ACTION = {k.action: k for k in KEYS}


def key(action: str) -> Key:
    """The key of an action; KeyError names an action the map does not have."""
    return _BY_ACTION[action]


def shortcut(action: str) -> str:
    """What a Streamlit button's `shortcut=` takes for an action ("N", "Ctrl+Enter")."""
    found = key(action)
    if found.by == "script" or found.family:
        raise ValueError(f"{action} is not one Streamlit shortcut ({found.press})")
    return found.press


def digit_shortcut(action: str, n: int) -> str:
    """The n-th key (1-based) of a family of digits ("1-9", "Alt+1-9", "1-3")."""
    found = key(action)
    wanted = f"{found.press[:-3]}{n}"
    if not found.family or wanted not in found.presses():
        raise ValueError(f"{action} has no key {n} ({found.press})")
    return wanted


def shown(action: str) -> str:
    """An action's key as help texts write it."""
    found = key(action)
    return found.shown or found.press


def tag_free(keys: tuple[Key, ...] = KEYS) -> list[str]:
    """The letters a tag may take: none that another key binds on a page of the form, nor
    Streamlit's own. The same on every page of the form, so a tag keeps its letter."""
    taken = set(STREAMLIT_LETTERS)
    for k in keys:
        if not k.typing and k.action != "tag" and set(k.pages) & set(FORM):
            taken |= {p for p in k.presses() if len(p) == 1 and p.isalpha()}
    return [c for c in ascii_uppercase if c not in taken]


def reserved_letters() -> str:
    """The letters no tag takes, in order ("C, H, N, P, R, S and W")."""
    letters = sorted(set(ascii_uppercase) - set(tag_free()))
    return ", ".join(letters[:-1]) + " and " + letters[-1] if len(letters) > 1 else "".join(letters)


def conflicts(keys: tuple[Key, ...] = KEYS) -> list[str]:
    """Two actions that share a key on one page (one sentence each): every key of a page must
    do one thing. Tags take only free letters, so they clash with no letter of the page."""
    found = []
    for page in EVERY:
        seen: dict[tuple[bool, str], str] = {}
        for k in keys:
            if page not in k.pages:
                continue
            presses = ([f"tag letter {c}" for c in tag_free(keys)] if k.action == "tag"
                       else k.presses())
            for press in presses:
                spot = (k.typing, press.removeprefix("tag letter ").upper())
                if spot in seen and seen[spot] != k.action:
                    found.append(f"{press} does both {seen[spot]} and {k.action} on {page}")
                seen.setdefault(spot, k.action)
    return found


def help_rows(pages: tuple[Page, ...]) -> list[tuple[str, str]]:
    """(key, what it does) for each row of a help table over these pages, in the map's order."""
    rows = []
    for k in KEYS:
        if k.row or not set(k.pages) & set(pages):
            continue
        rows.append((k.shown or k.press, k.what.format(reserved=reserved_letters())))
    return rows


HELP_PAGES: dict[str, tuple[Page, ...]] = {
    "trace": ("trace",),
    "review": ("review-start", "review", "review-skip", "review-switch"),
    "adjudicate": ("adjudicate",),
    "group": ("group",),
}
"""The pages each help table lists: the labels panel's (`trace`, as docs/labels.md too), the
review page's (all its steps), the adjudication page's."""


def help_table(name: str) -> str:
    """The Markdown table of a help text (`HELP_PAGES`), with the note on typing after it."""
    lines = ["| key | what it does |", "|---|---|"]
    lines += [f"| {k} | {w} |" for k, w in help_rows(HELP_PAGES[name])]
    return "\n".join(lines) + "\n\n" + TYPING_NOTE + "\n"


def script_keys() -> str:
    """What the page's key script binds, as JSON: each action by its name, the key as the
    browser's `KeyboardEvent.key` says it (lower case) and whether Ctrl (or Cmd) goes with it."""
    names = {"Enter": "enter", "Esc": "escape"}
    out = {}
    for k in KEYS:
        if k.by == "streamlit" or k.family:  # the script finds digits and tags on the page
            continue
        bare = k.press.removeprefix("Ctrl+")
        out[k.action] = {"key": names.get(bare, bare.lower()), "ctrl": k.press != bare}
    return json.dumps(out, sort_keys=True).replace("<", "\\u003c")  # inside a <script>
