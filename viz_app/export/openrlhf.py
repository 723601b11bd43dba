"""OpenRLHF's shapes: its reward-model dataset and its process-reward dataset.

**openrlhf-rm.** Checked against `openrlhf/datasets/reward_dataset.py` and
`openrlhf/cli/train_rm.py` (OpenRLHF/OpenRLHF at 3c3be62, 2026-08-13): `RewardDataset` reads
`--data.chosen_key` (default `chosen`) and `--data.rejected_key` (default `rejected`), and
`--data.prompt_key`, whose default is *None*: then the prompt is empty and `chosen` and
`rejected` are read as whole documents. An optional `margin` column feeds the margin loss
(`--model.margin_loss_enable`). So each row's `chosen` and `rejected` hold the prompt and the
orchestration together (`Task: ...` then its events), and there is no `prompt` column to be read
twice by mistake. With `--conversational` they are message lists (the task as a user message,
then the orchestration's messages), for `--data.apply_chat_template`. The pairs, margins and
what is left out are the preference export's (`viz_app.export.preference`).

**openrlhf-prm.** OpenRLHF removed its process reward model in 6a981c8 (2026-03-19, "remove
KTO, PRM, KD ..."); the last release that trains one is v0.9.5. Its shape, from
`openrlhf/datasets/process_reward_dataset.py` and `openrlhf/cli/train_prm.py` there (and
`examples/scripts/train_prm_mistral.sh`): `--input_key` (default `input`) holds the text with a
placeholder token after each step (`--placeholder_token`, `ки` in the example), `--label_key`
(default `label`; the example's Math-Shepherd data calls it `value`) a list with one entry per
placeholder: reward tokens (`--reward_tokens + -`), or floats, which `PRMLoss` would read as
soft labels but which v0.9.5's dataset cannot carry: `ProcessRewardDataset.__getitem__` makes
`labels = torch.full_like(input_ids, -100)` (an integer tensor) and assigns the float labels into
it, which fails. So rows here have `input` and `label` with `+` or `-` per step
(`reward > threshold`), the one form the release trains on; each step's reward stays beside in
`rewards`. A placeholder already in an event's text is written as `к и`, so the placeholders
count the steps exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from viz_app.errors import OrchvizError
from viz_app.export.consensus import ExportOptions
from viz_app.export.prompts import branches, header, segments, trace_columns
from viz_app.export.steps import TraceSteps

PLACEHOLDER = "ки"
"""The step placeholder token of OpenRLHF's PRM example (`--placeholder_token ки`)."""

NO_CONVERSATIONAL_PRM = (
    "--format openrlhf-prm has no conversational variant because OpenRLHF's process reward "
    "dataset reads one string per row (OpenRLHF v0.9.5: openrlhf/datasets/"
    "process_reward_dataset.py tokenizes --input_key as text): drop --conversational")

POSITIVE, NEGATIVE = "+", "-"
"""The reward tokens of OpenRLHF's PRM example (`--reward_tokens + -`)."""


def rm_rows(preference_rows: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """OpenRLHF reward-model rows from preference rows: `chosen` and `rejected` each hold the
    prompt and the orchestration (OpenRLHF reads them whole by default), then `margin` and what
    the preference row keeps."""
    for row in preference_rows:
        prompt, chosen, rejected = row["prompt"], row["chosen"], row["rejected"]
        yield {"chosen": prompt + chosen, "rejected": prompt + rejected,
               **{k: v for k, v in row.items() if k not in ("prompt", "chosen", "rejected")}}


def _step_text(text: str) -> str:
    return text.replace(PLACEHOLDER, "к и")


def prm_branch_rows(ts: TraceSteps, options: ExportOptions) -> Iterator[dict[str, Any]]:
    """The process-reward rows of one trace (as it happened, then one per 'should have
    stopped at' pointer, as stepwise makes them: `viz_app.export.prompts.branches`): the
    header and the events before the first step, then each step's events followed by the
    placeholder (a pointer's step ends with the stop it corrects, placed at the event pointed
    at)."""
    lines = [_step_text(line) for line in ts.lines]
    head = header(ts.trace, options.prompt_with_system)
    for positions, steps in branches(ts):
        before, parts = segments(ts, positions, steps, lines)
        yield {"input": head + before + "".join(p.rstrip("\n") + f" {PLACEHOLDER}\n"
                                                for p in parts),
               "label": [POSITIVE if s.label(options.threshold) else NEGATIVE for s in steps],
               **trace_columns(ts, options, steps)}


def prm_rows(all_steps: Sequence[TraceSteps], options: ExportOptions) -> Iterator[dict]:
    """The process-reward rows of every trace with a step."""
    if options.conversational:
        raise OrchvizError(NO_CONVERSATIONAL_PRM)
    for ts in all_steps:
        yield from prm_branch_rows(ts, options)
