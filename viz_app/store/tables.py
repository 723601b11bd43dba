"""Every table orchviz keeps, in one place: the label store, the bookmarks and the trace index
share one database. The migration history (`viz_app/store/migrations`) creates and changes them;
these declarations are what its newest revision leaves, and what the stores query."""

from __future__ import annotations

from sqlalchemy import (BigInteger, Boolean, Column, Float, Index, Integer, MetaData, String,
                        Table, Text, UniqueConstraint)

from viz_app.search import WORD_LIMIT

metadata = MetaData()

labels_table = Table(
    "labels", metadata,
    Column("label_id", String(64), primary_key=True),
    Column("trace_id", String(512), nullable=False),
    Column("trace_sha256", String(64), nullable=False),
    Column("event_id", String(512), nullable=False),
    Column("question", String(64), nullable=False),
    Column("value", Text, nullable=False),
    Column("reward", Float, nullable=True),
    Column("reviewer", String(256), nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("rubric_version", String(64), nullable=False),
    Column("rubric_sha256", String(64), nullable=False),
    Column("comment", Text, nullable=False),
    Column("seconds_spent", Float, nullable=True),
    Column("source", String(16), nullable=False),
    Column("origin", Text, nullable=False),
    Column("pair_trace_id", String(512), nullable=True),
    Column("identified_by", String(16), nullable=False, server_default=""),
    Column("created_at_given", Text, nullable=True),
    Column("mapping", String(16), nullable=False, server_default=""),
    Column("campaign", String(256), nullable=False, server_default=""),
    Column("suggestions_visible", Boolean, nullable=True),
    Index("labels_by_target", "trace_id", "event_id", "question", "reviewer"),
)
"""One row per save. `value` is the answer as JSON; `event_id` is '' for the trace itself;
`pair_trace_id` names the second trace of a pairwise judgement (None for any other label);
`identified_by` says how the reviewer was known (see `Label.identified_by`);
`created_at_given` is an imported record's own time when another was stored (see
`Label.created_at_given`); `mapping` says how sure an imported annotation's mapping onto the
question is (see `Label.mapping`); `campaign` names the review campaign a label was saved in
('' outside one); `suggestions_visible` says whether suggestions were on screen when it was made
(None when not known). The columns are in `Label`'s field order."""


retractions_table = Table(
    "retractions", metadata,
    Column("retraction_id", String(64), primary_key=True),
    Column("label_id", String(64), nullable=False, index=True),
    Column("lead", String(256), nullable=False),
    Column("identified_by", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("campaign", String(256), nullable=False, server_default=""),
    Column("created_at", String(32), nullable=False),
)
"""A lead's retraction of a label (a trial run, a reviewer who misread the rubric): appended,
never a deletion, so the history stays while agreement and exports leave the label out."""



bookmarks_table = Table(
    "bookmarks", metadata,
    Column("version_id", String(64), primary_key=True),
    Column("bookmark_id", String(64), nullable=False),
    Column("trace_id", String(512), nullable=False),
    Column("trace_sha256", String(64), nullable=False),
    Column("event_id", String(512), nullable=True),
    Column("start_s", Float, nullable=False),
    Column("end_s", Float, nullable=False),
    Column("note", Text, nullable=False),
    Column("reviewer", String(256), nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("removed", Boolean, nullable=False),
    Index("bookmarks_by_trace", "trace_id", "bookmark_id"),
)
"""One row per version of a bookmark; `start_s == end_s` for an event or an instant."""


trace_index = Table(
    "orchviz_trace_index", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("path", String(2048), nullable=False, index=True),
    Column("position", Integer, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("mtime_ns", BigInteger, nullable=False),
    Column("trace_id", String(512), index=True),
    Column("task_id", Text),
    Column("system", Text),
    Column("topology", String(64)),
    Column("source_format", String(64)),
    Column("events", Integer),
    Column("agents", Integer),
    Column("depth", Integer),
    Column("makespan_s", Float),
    Column("parallelism", Float),
    Column("tokens", Float),
    Column("cost_usd", Float),
    Column("sha256", String(64)),
    Column("warnings", Integer),
    Column("search_text", Text),
    Column("targets", Text),
    Column("rubric_sha", String(64)),
    Column("error", Text),
    Column("indexed_at", Float, nullable=False),
    Column("rollout_step", Integer),
    Column("rollout_group", Text),
    Column("trainer_reward", Float),
    Column("task", Text),
    Column("rewards", Text),  # the reward channels it carries, as JSON (Alembic 0014)
    Column("join_keys", Text),  # what the span join reads of it, as JSON (Alembic 0015)
    Column("joined", Text),  # what the span join made of it, as JSON (Alembic 0015)
    Column("words", Integer),  # how many words of it the word index keeps (Alembic 0017)
    UniqueConstraint("path", "position", name="uq_orchviz_trace_index_path_position"),
)
"""One row per trace of a file (position = its place in the file), or per failure (negative
position, `error` set, no trace id)."""

WORD = String(WORD_LIMIT * 4).with_variant(String(WORD_LIMIT * 4, collation="C"), "postgresql")
"""A word of the word index, compared byte by byte (SQLite's BINARY; PostgreSQL's "C"
collation), so that the words a search word begins are one range of the index."""

trace_words = Table(
    "orchviz_trace_words", metadata,
    Column("word", WORD, primary_key=True),
    Column("doc", Integer, primary_key=True),  # the trace's row: orchviz_trace_index.id
    Index("ix_orchviz_trace_words_doc", "doc"),
    sqlite_with_rowid=False,
)
"""The folder index's word index (Alembic 0017): a row for each word of each trace's search
text (`viz_app.search.index_words`), so a search reads the range of words each typed word
begins rather than every trace's text; written with the rows it is of (`store.index`)."""




members_table = Table(
    "members", metadata,
    Column("email", String(256), primary_key=True),
    Column("role", String(16), nullable=False),
    Column("added_by", String(256), nullable=False),
    Column("added_at", String(32), nullable=False),
)
"""Who may do what when the app signs people in: `lead` (creates campaigns, sees everyone's
progress, adjudicates, retracts) or `reviewer`."""


campaigns_table = Table(
    "campaigns", metadata,
    Column("campaign_id", String(64), primary_key=True),
    Column("name", String(256), nullable=False, unique=True),
    Column("rubric_version", String(64), nullable=False),
    Column("rubric_sha256", String(64), nullable=False),
    Column("questions", Text, nullable=False),
    Column("per_target", Integer, nullable=False),
    Column("selection", Text, nullable=False),
    Column("assisted", Boolean, nullable=False, server_default="0"),
    Column("queue_order", String(32), nullable=False, server_default="sample"),
    Column("lease_seconds", Integer, nullable=False, server_default="600"),
    Column("created_by", String(256), nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("closed_at", String(32), nullable=True),
)
"""A review campaign: a pinned rubric (version and hash), the questions asked (JSON list), K
reviewers per target, how its targets were selected (JSON: filter, sample, seed), whether
suggestions are shown before answering (`assisted`), how the queue is ordered, the lease."""


campaign_targets_table = Table(
    "campaign_targets", metadata,
    Column("target_id", Integer, primary_key=True, autoincrement=True),
    Column("campaign_id", String(64), nullable=False),
    Column("trace_id", String(512), nullable=False),
    Column("trace_sha256", String(64), nullable=False),
    Column("event_id", String(512), nullable=False),
    Column("questions", Text, nullable=False),
    Column("required", Integer, nullable=False),
    Column("gold", Boolean, nullable=False, server_default="0"),
    Column("gold_answers", Text, nullable=True),
    Column("priority", Float, nullable=False, server_default="0"),
    UniqueConstraint("campaign_id", "trace_id", "event_id", name="uq_campaign_target"),
)
"""One target of a campaign (`event_id` '' for the trace itself): the questions asked of it (JSON
list), how many reviewers must complete it (`required`: the campaign's K, or more for the share
kept for agreement), and for a gold item its known answers (JSON), never shown to reviewers."""


campaign_slots_table = Table(
    "campaign_slots", metadata,
    Column("slot_id", Integer, primary_key=True, autoincrement=True),
    Column("campaign_id", String(64), nullable=False),
    Column("target_id", Integer, nullable=False),
    Column("slot", Integer, nullable=False),
    Column("priority", Float, nullable=False, server_default="0"),
    Column("state", String(16), nullable=False, server_default="open"),
    Column("reviewer", String(256), nullable=True),
    Column("leased_until", Float, nullable=True),
    Column("claimed_at", String(32), nullable=True),
    Column("completed_at", String(32), nullable=True),
    Column("token", String(64), nullable=True),
    UniqueConstraint("target_id", "slot", name="uq_campaign_slot"),
    UniqueConstraint("target_id", "reviewer", name="uq_campaign_slot_reviewer"),
    Index("campaign_slots_queue", "campaign_id", "state", "priority", "slot_id"),
)
"""The K places of each target (`required` of them), the unit a reviewer claims: `open`,
`leased` to a reviewer until `leased_until` (seconds since the epoch; an expired lease is open
again), or `done`. The constraints are what the database enforces: a target never has more
slots than it needs, and a reviewer holds at most one slot of a target. `token` is the secret the
slot's claim was issued with: a save, skip or renewal must bring it back."""


campaign_skips_table = Table(
    "campaign_skips", metadata,
    Column("skip_id", Integer, primary_key=True, autoincrement=True),
    Column("campaign_id", String(64), nullable=False),
    Column("target_id", Integer, nullable=False),
    Column("reviewer", String(256), nullable=False),
    Column("reason", Text, nullable=False),
    Column("created_at", String(32), nullable=False),
    Index("campaign_skips_by_reviewer", "campaign_id", "reviewer", "target_id"),
)
"""A target a reviewer put back, with why: it goes to others and is not offered to them again."""


suggestions_table = Table(
    "suggestions", metadata,
    Column("suggestion_id", String(64), primary_key=True),
    Column("trace_id", String(512), nullable=False),
    Column("trace_sha256", String(64), nullable=False),
    Column("event_id", String(512), nullable=False),
    Column("question", String(64), nullable=False),
    Column("value", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("producer", String(64), nullable=False),
    Column("producer_version", String(32), nullable=False),
    Column("model", String(256), nullable=False, server_default=""),
    Column("prompt_sha256", String(64), nullable=False, server_default=""),
    Column("evidence", Text, nullable=False),
    Column("explanation", Text, nullable=False),
    Column("created_at", String(32), nullable=False),
    Index("suggestions_by_target", "trace_id", "event_id", "question"),
)
"""A producer's suggested answer (a deterministic detector, or a judge model), kept apart from
labels: `value` as JSON, the evidence event ids as a JSON list, the producer's name, version,
model and prompt hash. The id is derived from the producer, the trace hash, the target and the
question, so running one producer version on one trace twice adds nothing."""


suggestion_failures_table = Table(
    "suggestion_failures", metadata,
    Column("failure_id", String(64), primary_key=True),
    Column("trace_id", String(512), nullable=False),
    Column("trace_sha256", String(64), nullable=False),
    Column("event_id", String(512), nullable=False),
    Column("question", String(64), nullable=False),
    Column("producer", String(64), nullable=False),
    Column("producer_version", String(32), nullable=False),
    Column("model", String(256), nullable=False, server_default=""),
    Column("prompt_sha256", String(64), nullable=False, server_default=""),
    Column("error", Text, nullable=False),
    Column("created_at", String(32), nullable=False),
)
"""A producer that gave no suggestion for a target (a judge's timeout, refusal or invalid
answer), and why: recorded, never turned into a suggestion."""


learned_models_table = Table(
    "learned_models", metadata,
    Column("model_id", String(64), primary_key=True),
    Column("question", String(64), nullable=False),
    Column("campaign", String(256), nullable=False, server_default=""),
    Column("features_version", String(16), nullable=False),
    Column("sklearn_version", String(32), nullable=False),
    Column("targets", Integer, nullable=False),
    Column("training", Text, nullable=False),
    Column("report", Text, nullable=False),
    Column("created_by", String(256), nullable=False, server_default=""),
    Column("created_at", String(32), nullable=False),
    Index("learned_models_by_question", "question", "created_at"),
)
"""A learned producer's model (`orchviz suggest train`): `model_id` is the SHA-256 of its
training set (the labels it learnt from, the features' version and the fitting settings), so the
same labels give the same id and one more label a new one; `training` (JSON) holds the feature
rows and answers it was fitted on, from which the estimator is fitted again when it is used (no
pickled object is ever read back from the store); `report` (JSON) its cross-validated agreement
with held-out human labels."""

reward_models_table = Table(
    "reward_models", metadata,
    Column("model_id", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("campaign", String(256), nullable=False, server_default=""),
    Column("features_version", String(16), nullable=False),
    Column("versions", Text, nullable=False),
    Column("weights_sha256", String(64), nullable=False),
    Column("decisions", Integer, nullable=False),
    Column("training", Text, nullable=False),
    Column("report", Text, nullable=False),
    Column("created_by", String(256), nullable=False, server_default=""),
    Column("created_at", String(32), nullable=False),
    Index("reward_models_by_time", "created_at"),
)
"""A reward model (`orchviz reward train`): `model_id` is the SHA-256 of its training set and
settings; `training` (JSON) holds the decisions, rewards and pairs it was fitted on, from which
its weights are fitted again when it is loaded and checked against `weights_sha256` (no pickled
object is ever read back); `versions` (JSON) the orchviz, scikit-learn, NumPy and SciPy of the
fit; `report` (JSON) its held-out figures and held-out scores (the Agreement page's)."""

drafts_table = Table(
    "drafts", metadata,
    Column("reviewer", String(256), primary_key=True),
    Column("form", String(512), primary_key=True),
    Column("answers", Text, nullable=False),
    Column("updated_at", String(32), nullable=False),
)
"""What a reviewer has given on a form but not saved (`store.drafts`): `form` names the form
(a trace version's panel, a campaign claim, an adjudication), `answers` (JSON) maps each of its
widgets to the answer or note in it. Never a label: nothing reads it but that reviewer's form."""


dispute_comments_table = Table(
    "dispute_comments", metadata,
    Column("comment_id", String(64), primary_key=True),
    Column("campaign", String(256), nullable=False),
    Column("trace_id", String(512), nullable=False),
    Column("event_id", String(512), nullable=False),
    Column("author", String(256), nullable=False),
    Column("identified_by", String(16), nullable=False),
    Column("role", String(16), nullable=False),
    Column("text", Text, nullable=False),
    Column("trace_sha256", String(64), nullable=False, server_default=""),
    Column("created_at", String(32), nullable=False),
    Index("dispute_comments_by_target", "campaign", "trace_id", "event_id", "created_at"),
)
"""A comment on a disputed target of a campaign (`store.comments`): who wrote it (`author`, how
they were known: `identified_by`; in what part: `role`, a reviewer of the dispute or a lead),
when, on which version of the trace (`trace_sha256`, '' when none was on screen), and its text
(Markdown the author means, shown through `viz_app.text.note_markdown`). Appended, never edited
or deleted: a thread is what was said, in order. `event_id` is '' for the trace itself."""


dispute_comment_hidings_table = Table(
    "dispute_comment_hidings", metadata,
    Column("hiding_id", String(64), primary_key=True),
    Column("comment_id", String(64), nullable=False),
    Column("campaign", String(256), nullable=False),
    Column("hidden_by", String(256), nullable=False),
    Column("identified_by", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("action", String(16), nullable=False, server_default="hidden"),
    Index("dispute_comment_hidings_by_campaign", "campaign", "comment_id"),
)
"""A lead's hiding of a dispute comment, or showing it again (`store.comments`): which comment,
`action` (`hidden` or `shown`), who (how they were known), when and why. Appended: the
comment's row and text stay as they were, and a comment's latest row says whether it is hidden
(`labels.thread.CommentHiding`)."""

follow_tails_table = Table(
    "orchviz_follow_tails", metadata,
    Column("path", String(2048), primary_key=True),
    Column("tail", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
)
"""Where the trace index left each rollout file it follows (`io.follow.Tail` as JSON: byte
offset, lines and traces read, the head's hash, the file's inode, size and modification time),
written in the transaction that writes the rows read, so that the index started again reads
only what a trainer appended since, never a line twice and none skipped."""
