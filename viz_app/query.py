"""The filter language of the library, folders and pools alike: a filter is a list of
`Condition(field, op, value)` over the fields of FIELDS (or `reward.NAME`, a carried reward
channel), written on a command line or in the app as `agents>10`, `topology=tree` or
`reward.team>=0.5`; `FIELD:VALUE` is `FIELD=VALUE` (`group:train:40:9f3a`), and a line of
them, comma or space separated (`step>=40 group:train:40:9f3a`), is read by `parse_conditions`.

It is parsed and checked here; the stores turn a Condition into their own SQL, always binding
its value as a parameter, so no user text becomes SQL. The UI and the CLI import this module to
read a filter, never a store.

The library's one order is here too (`ordered`): the traces a filter and search select are
listed in the library's order (a folder's files then their positions, a pool's shards then
their rows) unless a field is chosen to sort by; then by that field, its missing values last,
the traces it ties in the library's order, ascending or descending alike. A search orders
nothing: it selects, as a filter does, so the rows of a table keep their places when words are
typed, a page is the same in a folder and in a pool (and in SQLite and PostgreSQL), and it is
the order the sampler draws over. (A relevance rank was given up for it: FTS5's bm25 over
templated rollouts mostly ranks by length, a folder on PostgreSQL has no bm25 to match it, and
a pool ranked only searches of fewer than 20,000 hits anyway.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from viz_app.errors import OrchvizError


class FilterError(OrchvizError):
    """A filter or sort the library cannot use: an unknown field, operator or value."""


@dataclass(frozen=True)
class IndexField:
    """A field of the library that filters, sorts, histograms and strata may name."""

    column: str
    """Its column in the pool index's `traces` table (an attribute of `summary.LibraryRow`)."""
    kind: Literal["text", "number"]
    help: str
    sql: str | None = None
    """Its SQL over the pool index's `traces` table `t`, when it is not that one column."""


FIELDS: dict[str, IndexField] = {
    "trace_id": IndexField("trace_id", "text", "the trace's id"),
    "task_id": IndexField("task_id", "text", "the task the run attempted"),
    "group": IndexField("group", "text", "the group of siblings a trainer sampled for one "
                        "prompt at one step; else the task (a GRPO group: rollouts of one task)",
                        sql="coalesce(t.rollout_group, t.task_id)"),
    "step": IndexField("rollout_step", "number", "the training step a rollout was sampled at"),
    "trainer_reward": IndexField("trainer_reward", "number",
                                 "the reward the trainer gave the rollout (not a label)"),
    "system": IndexField("system", "text", "the system that produced it"),
    "topology": IndexField("topology", "text", "its orchestration topology"),
    "source_format": IndexField("source_format", "text", "orchviz, or the importer's name"),
    "shard": IndexField("shard", "text", "the shard it is in"),
    "row": IndexField("position", "number", "its row in the shard"),
    "events": IndexField("events", "number", "number of events"),
    "agents": IndexField("agents", "number", "number of agents"),
    "depth": IndexField("depth", "number", "depth of the spawn tree"),
    "makespan_s": IndexField("makespan_s", "number", "first event to the end of the last (s)"),
    "parallelism": IndexField("parallelism", "number", "agent lifetimes over the makespan"),
    "tokens": IndexField("tokens", "number", "tokens the run used"),
    "cost_usd": IndexField("cost_usd", "number", "what the run cost in dollars"),
    "warnings": IndexField("warnings", "number", "structural warnings"),
    "targets": IndexField("target_count", "number", "what the rubric asks to label in it"),
}
"""Every field by the name filters use; `reward.NAME` names a carried reward channel too."""

NUMBER_FIELDS = [name for name, f in FIELDS.items() if f.kind == "number"]
REWARD_PREFIX = "reward."
Op = Literal["=", "!=", "<", "<=", ">", ">=", "~", "in"]
OPS = ("<=", ">=", "!=", "==", "=", "<", ">", "~", ":")
"""The operators a written filter may use (`:` is `=`; `in` is only built, never written)."""
_CONDITION = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(<=|>=|!=|==|=|<|>|~|:)\s*(.*?)\s*$")
_STARTS = re.compile(r"(?:^|(?<=\s))([A-Za-z_][\w.\-]*)\s*(?:<=|>=|!=|==|=|<|>|~|:)")


class Condition(BaseModel):
    """One structured filter: `field op value` (`~` is "contains", for text fields)."""

    field: str = Field(description="A name of FIELDS, or reward.NAME.")
    op: Op = Field(description="Comparison: = != < <= > >= ~ (contains) in (one of a list).")
    value: str | float | int | list[str | float | int] = Field(description="What to compare "
                                                                "with (a list for `in`).")


def parse_condition(expr: str) -> Condition:
    """A condition from a command-line expression such as `agents>10`, `topology=tree` or
    `reward.team>=0.5`; FilterError (one sentence) when it is not one."""
    found = _CONDITION.match(expr or "")
    if found is None or not found.group(3):
        raise FilterError(f"cannot read the filter {expr!r}: write FIELD OP VALUE, such as "
                          f"agents>10 or topology=tree (operators {' '.join(OPS)})")
    name, op, value = found.groups()
    op = "=" if op in ("==", ":") else op
    kind = field_kind(name)
    if kind == "number":
        if op == "~":
            raise FilterError(f"the filter {expr!r} uses ~ (contains) on {name}, a number")
        try:
            number = float(value)
        except ValueError:
            raise FilterError(f"the filter {expr!r} compares {name}, a number, with "
                              f"{value!r}") from None
        return Condition(field=name, op=op, value=number)
    return Condition(field=name, op=op, value=value.strip("'\""))


def parse_conditions(text: str) -> list[Condition]:
    """The conditions of a line a person typed: comma separated, or space separated where the
    next word begins a condition on a known field (`step>=40 group:train:40:9f3a`); a value
    may hold spaces (`system=my system`). FilterError (one sentence) for the first that is
    not one."""
    found: list[Condition] = []
    for part in (text or "").split(","):
        starts = [m.start() for m in _STARTS.finditer(part) if _known(m.group(1))] or [0]
        starts[0] = 0
        for begin, end in zip(starts, [*starts[1:], len(part)]):
            if part[begin:end].strip():
                found.append(parse_condition(part[begin:end]))
    return found


def condition_text(condition: Condition) -> str:
    """A condition as a person writes it (`agents>10`, `topology in swarm, tree`): how a held
    filter is said back to the person who typed it (plain text: escape it for its medium)."""
    value = condition.value
    if isinstance(value, list):
        return f"{condition.field} in {', '.join(_number_text(v) for v in value)}"
    return f"{condition.field}{condition.op}{_number_text(value)}"


def _number_text(value: str | float | int) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _known(name: str) -> bool:
    return name in FIELDS or (name.startswith(REWARD_PREFIX) and len(name) > len(REWARD_PREFIX))


def field_kind(name: str) -> str:
    """"number" or "text": what a field holds (a reward channel is a number); FilterError for
    a name the library has no field for."""
    if name.startswith(REWARD_PREFIX) and len(name) > len(REWARD_PREFIX):
        return "number"
    if name not in FIELDS:
        raise FilterError(f"the pool index has no field {name!r} (fields: "
                          f"{', '.join(FIELDS)}, reward.NAME)")
    return FIELDS[name].kind


def field_value(name: str, value: Any) -> float | str:
    """A value as the field compares it: a float for a number field, else text; FilterError
    when a number field is given something that is not one."""
    if field_kind(name) == "number":
        try:
            return float(value)
        except (TypeError, ValueError):
            raise FilterError(f"{name} is a number, not {value!r}") from None
    return str(value)


def row_value(row: Any, name: str) -> Any:
    """A field's value on a row of the library (`summary.LibraryRow`), as the pool index's
    column holds it: `group` is the task, `row` the place in the file, `shard` the file,
    `targets` how many there are, `reward.NAME` a carried reward (None when it has none)."""
    if field_kind(name) == "number" and name.startswith(REWARD_PREFIX):
        return (getattr(row, "rewards", None) or {}).get(name[len(REWARD_PREFIX):])
    if name == "targets":
        return None if row.targets is None else len(row.targets)
    return getattr(row, {"row": "position", "shard": "path"}.get(name, FIELDS[name].column))


def ordered(rows: Sequence[Any], sort: str | None = None,
            descending: bool = False) -> list[Any]:
    """Rows of the library in the library's one order (see above): as they come (the
    library's order) with no `sort`, else by the field, missing values last and ties in the
    order they came, whether `descending` or not. A pool's index orders its SQL the same way
    (`store.pool_index._sql.order_sql`)."""
    if sort is None:
        return list(rows)
    field_kind(sort)
    known = [r for r in rows if row_value(r, sort) is not None]
    known.sort(key=lambda r: row_value(r, sort), reverse=descending)  # stable: ties keep order
    return known + [r for r in rows if row_value(r, sort) is None]


def holds(row: Any, condition: Condition) -> bool:
    """Whether a row of the library meets a condition: what the pool index's SQL asks of its
    rows, asked of a row in memory (the folder library's filters). A missing value meets none."""
    value = row_value(row, condition.field)
    if value is None:
        return False
    if condition.op == "in":
        wanted = condition.value if isinstance(condition.value, list) else [condition.value]
        return field_value(condition.field, value) in {field_value(condition.field, v)
                                                       for v in wanted}
    if condition.op == "~":
        if field_kind(condition.field) != "text":
            raise FilterError(f"~ (contains) needs a text field, not {condition.field}")
        return str(condition.value).lower() in str(value).lower()
    left, right = field_value(condition.field, value), field_value(condition.field,
                                                                  condition.value)
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[condition.op]
