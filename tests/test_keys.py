"""The one key map (components/keys.py): every key does one thing on a page, every binding and
every help text reads it, and docs/labels.md's table is the map's."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from pathlib import Path

from components import keys

REPO = Path(__file__).resolve().parent.parent


def test_no_two_actions_share_a_key_on_one_page():
    assert keys.conflicts() == []


def test_a_key_given_to_two_actions_of_one_page_is_named():
    clash = (*keys.KEYS, replace(keys.key("correct"), action="also-skip", press="S"))
    assert keys.conflicts(clash) == [
        "S does both skip-target and also-skip on trace",
        "S does both review-skip and also-skip on review"]
    # another step of the page is another page: the skip reasons' digits are not the answers'
    assert not [c for c in keys.conflicts() if "skip-reason" in c]


def test_a_letter_a_key_takes_is_never_a_tags():
    assert keys.reserved_letters() == "C, H, N, P, R, S and W"
    assert not set("CHNPRSW") & set(keys.tag_free())
    moved = tuple(replace(k, press="K") if k.action == "correct" else k for k in keys.KEYS)
    assert "K" in keys.tag_free() and "K" not in keys.tag_free(moved)
    assert "W" in keys.tag_free(moved)


def test_every_shortcut_in_the_code_comes_from_the_key_map():
    """No `shortcut=` names a key of its own: each reads the map."""
    written = []
    for path in [*(REPO / "components").rglob("*.py"), *(REPO / "viz_app").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "shortcut" and isinstance(
                    node.value, (ast.Constant, ast.JoinedStr)):
                written.append(f"{path.relative_to(REPO)}:{node.value.lineno}")
    assert written == []


def test_the_key_script_binds_no_key_of_its_own():
    """keyboard.js takes its keys from the map (KEYS), naming none but a text box's own."""
    script = (REPO / "components" / "static" / "keyboard.js").read_text("utf-8")
    code = "\n".join(line for line in script.splitlines() if not line.strip().startswith("//"))
    assert re.findall(r'event\.key\s*===\s*"', code) == []
    handed = json.loads(keys.script_keys())
    assert set(re.findall(r'is\(event, "([\w-]+)"\)', code)) == set(handed)
    assert handed["correct"] == {"key": "w", "ctrl": False}
    assert handed["save"] == {"key": "enter", "ctrl": True}


def test_docs_labels_key_table_is_the_key_maps():
    text = (REPO / "docs" / "labels.md").read_text("utf-8")
    table = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    start = table.index("| key | what it does |")
    documented = table[start:start + 2 + len(keys.help_rows(keys.HELP_PAGES["trace"]))]
    assert "\n".join(documented) == keys.help_table("trace").split("\n\n")[0]


def test_w_is_in_every_list_of_keys_of_a_page_with_the_form():
    for name in ("trace", "review", "adjudicate"):
        assert "| W | write the correction" in keys.help_table(name)
    assert "skip this target" in keys.help_table("review")
    assert "skip this target" not in keys.help_table("trace")


def test_a_family_of_digits_gives_one_shortcut_a_digit():
    assert keys.digit_shortcut("pick", 3) == "3"
    assert keys.digit_shortcut("pick-second", 9) == "Alt+9"
    assert keys.digit_shortcut("skip-reason", 2) == "2"
    for wrong in (("skip-reason", 4), ("next-target", 1)):
        try:
            keys.digit_shortcut(*wrong)
        except ValueError:
            continue
        raise AssertionError(wrong)
