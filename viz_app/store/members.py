"""The members store: who is a lead and who a reviewer, when the app signs people in.

Roles matter only where the reviewer's name is verified (the app's OpenID Connect sign-in): a
signed-in person's role is what this table says, and a person it does not name has none. Without
sign-in (a person alone on a laptop) names are self-declared, and everyone may act as a lead of
their own database; the Workspace decides that (`ws.campaigns.may_lead`), not this store.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlalchemy import Engine, delete, insert, select

from viz_app.errors import LabelError
from viz_app.labels import ROLES, Role, now
from viz_app.store.tables import members_table


class Member(BaseModel):
    """A member of the workspace and their role."""

    email: str = Field(description="The e-mail they sign in with.")
    role: Role
    added_by: str = Field(description="Who added them (or last changed their role).")
    added_at: str


def _email(email: str) -> str:
    """An e-mail as the table keys it: trimmed and lower-cased (sign-in providers differ in
    case); LabelError when it is empty or not on one line."""
    found = (email or "").strip().lower()
    if not found or any(ord(ch) < 33 or ord(ch) == 127 for ch in found) or len(found) > 256:
        raise LabelError(f"{email!r} is not an e-mail address")
    return found


class MemberStore:
    """The members of one database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def add(self, email: str, role: str, by: str) -> Member:
        """Add a member, or change a member's role; LabelError for a role other than lead or
        reviewer."""
        if role not in ROLES:
            raise LabelError(f"no role {role!r} (roles: {', '.join(ROLES)})")
        row = {"email": _email(email), "role": role, "added_by": by, "added_at": now()}
        with self.engine.begin() as conn:
            conn.execute(delete(members_table).where(members_table.c.email == row["email"]))
            conn.execute(insert(members_table), [row])
        return Member(**row)

    def remove(self, email: str) -> bool:
        """Remove a member; whether there was one."""
        with self.engine.begin() as conn:
            done = conn.execute(delete(members_table).where(
                members_table.c.email == _email(email)))
        return bool(done.rowcount)

    def all(self) -> list[Member]:
        """Every member, by e-mail."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(members_table).order_by(members_table.c.email)).all()
        return [Member(**row._mapping) for row in rows]

    def role(self, email: str) -> Role | None:
        """A member's role; None for someone the table does not name."""
        try:
            key = _email(email)
        except LabelError:
            return None
        with self.engine.connect() as conn:
            return conn.execute(select(members_table.c.role).where(
                members_table.c.email == key)).scalar()
