"""The thresholds of the fault detectors, in one place: docs/suggestions.md says why each is
where it is (the figure that chose it on the planted faults of `viz_app.planted`, tuning part).
Changing one changes what the rules suggest: raise `VERSION` (`rules.detectors`) with it."""

NEAR_DUPLICATE = 90.0
"""Word-level similarity (0-100, `near_duplicate`) at or above which two texts are
near-duplicates: at most one word in ten differs."""

COVERED = 85.0
"""rapidfuzz token_set_ratio (0-100) at or above which a text's content is present in another
(the smaller text's words are, nearly all, in the larger one)."""

MIN_WORDS = 4
"""Texts with fewer words than this are too short to compare (a pointer, "done")."""

DUPLICATE_WINDOW = 50
"""A message (a child's task, a delegation) is compared with at most this many earlier ones to
the same agent (siblings, delegations), so a long trace stays linear."""

SAME_SUBJECT = 40.0
"""rapidfuzz token_set_ratio (0-100), figures left out, at or above which two results speak
about the same thing (so different figures in them disagree)."""

ABSENT = 0.4
"""A merged result is absent from the output below this presence (0-1, `presence`): the
IDF-weighted share of its distinctive content (what no other merged result says) the output
carries, its best sentence counted when that scores higher."""

PRESENT = 0.5
"""A merge is judged for drops only when it keeps at least one other result at this presence
(0-1) or more: an output that keeps none of its inputs is a rewrite, not a drop."""

LOST_SHARE = 1 / 3
"""At most this share of a merge's parts (one at least) may be absent for them to be drops: an
output that leaves out more is a summary (a swarm's 34 file reports become "hot spots")."""

SENTENCE_TOKENS = 3
"""A sentence of a merged result counts on its own (`presence`) when it has at least this many
distinctive content tokens: shorter ones match by accident."""

OWN_TOKENS = 2
"""A merged result with fewer distinctive content tokens than this says nothing of its own
("Confirmed: ..." beside the result it confirms): it cannot be dropped."""

READY = 0.9
"""An earlier text held the final answer when it carries at least this weighted share (0-1) of
the final answer's content tokens, every figure of it included."""

READY_FIGURES = 2
"""A final answer stating this many figures or more is held by an earlier text that states
them all, whatever its wording (`Context.holds`)."""

READY_WORDS = 0.5
"""An earlier text stating every figure of a final answer held it only with at least this
weighted share (0-1) of the answer's content tokens too."""

READY_TOKENS = 3
"""A final answer needs this many content tokens before an earlier text can be said to hold
it ("Done." is held by everything)."""

SAME_TASK = 0.8
"""Two sibling tasks are the same sub-task at this similarity (0-1) or above: weighted Jaccard
of their content tokens, each weighted by its rarity among the siblings' tasks (a template
every sibling shares weighs nothing), no figure differing."""

SUBJECT_SHARE = 0.25
"""Two siblings' tasks share a subject when they share a word that at most this share of the
siblings' tasks have (two at least, never all of them): "LCO" in "Find the price of LCO" and
"Look up LCO's cost", not the template's "price". Tasks sharing a subject are the same
sub-task when their results also agree (`SAME_RESULT`): a paraphrased task shares few
words."""

SAME_RESULT = 0.6
"""Two siblings' returns at least this alike (`_result_likeness`, 0-1) gave the same
result."""

DROP_WORDS = 8
"""A merged result needs this many words before its absence counts as a drop."""

TASK_CALLS = 3
"""A child's task, when no message gives it, is read from its first this many tool calls."""

MAX_INPUTS = 64
"""An aggregate's first this many inputs are compared pairwise (a wide swarm's are not)."""

ANCHOR_LENGTH = 3
"""A claim's anchor is a token with a digit of at least this many characters (v2.3.0, 3.12,
2023): an output that repeats one repeats the claim."""
