"""The table of stored models that `orchviz reward models` and `orchviz suggest models` both
print (`viz_app.cli.models`): one set of columns for every kind of model, a row that cannot be
read said in its place, and trace-borne text made safe for the terminal."""

from __future__ import annotations

from viz_app.cli.models import ModelLine, print_model_table

REWARD = ModelLine("a1b2c3d4e5f6a7b8", "", "2026-12-06T15:20:01.123456+00:00",
                   "310 answered, 44 pairs", "held-out alpha O1 0.52, O5 0.61")
LEARNED = ModelLine("0f1e2d3c4b5a6978", "week-49", "2026-12-05T09:00:00+00:00",
                    "  412 targets", "held-out alpha 0.712 [0.601, 0.804]",
                    question="spawn_necessity", mark="  (in use)")


def test_every_kind_of_model_is_listed_in_the_same_columns(capsys):
    print_model_table([REWARD, LEARNED], none="no model")
    reward, learned = capsys.readouterr().out.splitlines()
    assert reward == ("a1b2c3d4e5f6a7b8  all labels       2026-12-06T15:20:01  "
                      "310 answered, 44 pairs  held-out alpha O1 0.52, O5 0.61")
    assert learned == ("0f1e2d3c4b5a6978  spawn_necessity        week-49          "
                       "2026-12-05T09:00:00    412 targets  held-out alpha 0.712 "
                       "[0.601, 0.804]  (in use)")


def test_no_model_is_one_sentence_and_an_unreadable_row_is_said_in_its_place(capsys):
    print_model_table([], none="no reward model is stored: train one")
    assert capsys.readouterr().out == "no reward model is stored: train one\n"
    print_model_table(["REFUSED  the stored model of q (abc) cannot be read", REWARD], none="")
    refused, listed = capsys.readouterr().out.splitlines()
    assert refused.startswith("REFUSED  ") and listed.startswith(REWARD.version)


def test_a_campaign_name_cannot_forge_a_line_or_colour_the_terminal(capsys):
    hostile = ModelLine("a1b2c3d4e5f6a7b8", "x\n\x1b[31mforged", "2026-12-06", "1 answered",
                        "held-out alpha -")
    print_model_table([hostile], none="")
    (line,) = capsys.readouterr().out.splitlines()
    assert "\x1b" not in line and "\\x1b[31mforged" in line
