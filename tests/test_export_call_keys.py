"""The LLM call ids and token ids that training exports pass through are documented where users
look for the optional event keys: the README's table of extension keys and `orchviz schema`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from viz_app.cli import main
from viz_app.export.steps import CALL_KEYS, call_of
from viz_app.io.native import trace_from_dict

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.parametrize("key", CALL_KEYS)
def test_every_call_key_is_a_row_of_the_readme_extension_table(key):
    assert f"| `{key}` | " in README.read_text("utf-8")


def test_orchviz_schema_documents_every_call_key(capsys):
    assert main(["schema"]) == 0
    event = json.loads(capsys.readouterr().out)["$defs"]["event"]["properties"]
    for key, meaning in CALL_KEYS.items():
        assert event[key]["description"] == meaning
    assert event["prompt_token_ids"]["items"] == {"type": "integer"}


def test_a_trace_carrying_call_keys_validates_and_they_reach_the_export():
    from factories import premature

    raw = premature().to_dict()
    raw["events"][0].update(response_id="chatcmpl-1", llm_call_id=7, prompt_token_ids=[1, 2],
                            response_token_ids=[3])
    trace = trace_from_dict(raw, "t")
    assert call_of(trace.events[0]) == {"response_id": "chatcmpl-1", "llm_call_id": "7",
                                        "prompt_token_ids": [1, 2], "response_token_ids": [3]}
