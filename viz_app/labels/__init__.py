"""Reward labelling, pure (no SQL): the rubric and its targets, Label and its records, corrections
(what the orchestrator should have done), decision pairs, suggestions as data, bookmarks,
campaigns (their specs, queues and disagreements), attention and inter-reviewer agreement.

Callers import from this face, never from its modules, so the modules can split without moving a
caller. The face is lazy (`viz_app.face`): a pool's worker that needs the rubric loads
`labels.rubric`, not the agreement statistics with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz_app.face import lazy

if TYPE_CHECKING:  # the face: what callers import from viz_app.labels, each from its module
    from viz_app.labels.agreement import agreement as rubric_agreement
    from viz_app.labels.agreement import (AgreementHistory, AgreementRow, REVIEWERS,
                                          SuggestionAgreement, agreement_history, blind_labels,
                                          pairwise_agreement, question_agreement, short_version,
                                          suggestion_agreement, version_shifts)
    from viz_app.labels.attention import (LEARNED, contest, contests, earlier_reviewers,
                                          first_answers, latest_version, uncertainty)
    from viz_app.labels.bookmark import (Bookmark, anchor, bookmarks_at, checked_note,
                                         checked_reviewer, current_bookmarks)
    from viz_app.labels.campaign import (AlikeRefusal, AlikeSaved, AlikeTarget, Campaign,
                                         CampaignProgress, CampaignSpec, CampaignStatus, Claim,
                                         Disagreement, EXPIRED, FIGURES, Filter,
                                         INSTRUCTIONS_LIMIT, ORDERS, ROLES, ReviewerStatus, Role,
                                         STRATA, Sample, find_disagreements, gold_accuracy,
                                         label_target, spec_error)
    from viz_app.labels.campaign_plan import (STRATIFY, PlannedTarget, assign_agreement,
                                              campaign_questions, conditions, default_questions,
                                              draw_rows, filter_rows, gold_answers,
                                              optional_questions, per_step_groups, per_step_rows,
                                              plan_targets, prioritise, row_targets, sample_rows,
                                              storage_conditions, unindexed)
    from viz_app.labels.correction_agreement import (CorrectionAgreement, correction_agreements,
                                                     correction_similarity)
    from viz_app.labels.disagreement import SPREAD, close, disputed, same_answer
    from viz_app.labels.learned import (CALIBRATION_FOLDS, MIN_PER_ANSWER, LearnedModel,
                                        LearnedReport, LearnError, LeftOut, Truth, plain_answer,
                                        training_sha256)
    from viz_app.labels.correction import (ACTION_LABELS, Decision, DecisionPair,
                                           LATER_THAN_RECORDED, corrected_decision, decision_pairs,
                                           word_diff)
    from viz_app.labels.label import (ANSWER_KEY, FIELDS, Identity, ImportReport, Label,
                                      LabelRecord, NEWER_KEY, Progress, Reviewer, current_labels,
                                      derived_label_id, imported_time, label_from_record,
                                      newest_per_answer, now, now_after, progress_of,
                                      trace_sha256)
    from viz_app.labels.pairs import (PAIRWISE_PROMPT, PAIRWISE_QUESTION, Preference, STRENGTHS,
                                      judgement, judgement_label, pair_key, preference_of,
                                      preferences)
    from viz_app.labels.rubric import (CREDIT_UNITS, LabelError, LabelTarget, Question,
                                       REWARD_FAMILIES, Rubric, RubricError, TraceTarget, asked,
                                       check_answer, counted, default_rubric, load_rubric,
                                       pointer_optional, required_questions, reward_of,
                                       rubric_from_dict, rubric_from_yaml, targets)
    from viz_app.labels.suggestion import Producer, Suggestion, SuggestionFailure
    from viz_app.labels.confirmation import confirmation_pairs, sound
    from viz_app.labels.correction import (answer_text, correction_text, diff_spans,
                                           made_decision, pointer_advice, pointer_node,
                                           questions_of)
    from viz_app.labels.knowledge import seen_positions
    from viz_app.labels.signal import check_signal, pairs_of, read_rows, split_rows
    from viz_app.labels.thread import (COMMENT_LIMIT, REASON_LIMIT, CommentHiding,
                                       DisputeComment, DisputeThread, Moderation, Part,
                                       ThreadEntry, checked_comment, checked_reason,
                                       dispute_thread, for_reviewers, latest_hiding)

__getattr__, __dir__ = lazy(__name__, __file__)
