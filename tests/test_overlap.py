"""Content overlap (viz_app.suggest.overlap): which words of a text carry content, and how a
trace's own word statistics weigh them, so that a result sharing only the trace's common words
with an output is not "in" it."""

from __future__ import annotations

from viz_app.suggest.overlap import Lexicon, content, sentences


def test_function_words_carry_no_content():
    assert content("It is the one that was in the box") == {"one", "box"}


def test_plurals_and_word_endings_read_alike():
    assert content("cells cost") == content("cell costs")
    assert content("released") == content("release")


def test_a_figure_is_read_as_written_without_its_commas_or_trailing_zero():
    assert content("3,000 cycles at 21.0 C") == content("3000 cycles at 21 C")
    assert "2.3.0" in content("release 2.3.0")


def test_a_capital_letter_alone_names_an_option_but_the_article_a_does_not():
    assert "b" in content("Plan B was chosen")
    assert "a" not in content("A plan was chosen")


def test_a_word_every_text_has_weighs_less_than_one_text_alone_has():
    lex = Lexicon(["LFP cells cost 95", "NMC cells cost 120", "NCA cells cost 140"])
    assert lex.weight("cell") < lex.weight("lfp")


def test_a_figure_weighs_more_than_a_word_as_rare():
    lex = Lexicon(["LFP cells cost 95", "NMC cells cost 120"])
    assert lex.weight("95") > lex.weight("lfp")


def test_a_result_sharing_only_common_words_with_an_output_is_mostly_not_in_it():
    texts = ["LFP cells cost about 95 dollars per kWh according to BNEF.",
             "NMC cells cost about 120 dollars per kWh according to BNEF.",
             "NCA cells cost about 140 dollars per kWh according to BNEF.",
             "Answer: LFP cells cost about 95 dollars per kWh according to BNEF; NMC cells cost "
             "about 120 dollars per kWh according to BNEF."]
    lex = Lexicon(texts)
    out = content(texts[3])
    assert lex.coverage(content(texts[0]), out) == 1.0
    dropped = content(texts[2])
    assert lex.coverage(dropped, out) < 0.7
    others = content(texts[0]) | content(texts[1])
    assert lex.coverage(dropped - others, out) == 0.0


def test_in_a_template_lexicon_a_word_every_sibling_has_weighs_nothing():
    tasks = [content(f"Find the price of {e} and cite the source") for e in ("LFP", "NMC", "NCA")]
    lex = Lexicon(tasks, template=True)
    assert lex.weight("price") == 0.0
    assert lex.similarity(tasks[0], tasks[1]) == 0.0
    assert lex.similarity(tasks[0], tasks[0]) == 1.0


def test_nothing_is_missing_from_an_empty_part():
    assert Lexicon(["a b"]).coverage(frozenset(), frozenset({"x"})) == 1.0


def test_a_text_is_cut_into_sentences_at_their_ends_and_at_line_breaks():
    assert sentences("One. Two; three!\nFour?") == ["One.", "Two;", "three!", "Four?"]
