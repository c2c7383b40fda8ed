"""Users (``<idp>~<subject>`` ids). Deleting a user is a soft delete; the same id may return."""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host.store.db import Executor, now_ms


@frozen
class UserRow:
    id: str
    name: str
    email: str | None
    user_type: str  # human | application
    last_updated_with: str  # create-endpoint | config-call-creation | update-endpoint | role-provider
    created_at: int
    updated_at: int | None


def _user(row) -> UserRow | None:
    if row is None:
        return None
    return UserRow(
        id=row["id"],
        name=row["name"],
        email=row["email"],
        user_type=row["user_type"],
        last_updated_with=row["last_updated_with"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def get_user(db: Executor, user_id: str) -> UserRow | None:
    return _user(
        await db.fetch_one("SELECT * FROM users WHERE id = :id AND deleted_at IS NULL", {"id": user_id})
    )


async def create_or_update_user(
    db: Executor,
    user_id: str,
    name: str,
    email: str | None,
    user_type: str,
    last_updated_with: str,
) -> tuple[UserRow, bool]:
    """Insert, revive a deleted user, or overwrite a live one. Returns (row, created)."""
    t = now_ms()
    values = {
        "id": user_id, "name": name, "name_key": name.casefold(), "email": email,
        "user_type": user_type, "luw": last_updated_with, "t": t,
    }
    inserted = await db.fetch_one(
        "INSERT INTO users (id, name, name_key, email, user_type, last_updated_with, created_at) "
        "VALUES (:id, :name, :name_key, :email, :user_type, :luw, :t) "
        "ON CONFLICT (id) DO NOTHING RETURNING *",
        values,
    )
    if inserted is not None:
        return _user(inserted), True
    # a soft-deleted user coming back counts as created: fresh created_at, no updated_at
    revived = await db.fetch_one(
        "UPDATE users SET name = :name, name_key = :name_key, email = :email, user_type = :user_type, "
        "last_updated_with = :luw, created_at = :t, updated_at = NULL, deleted_at = NULL "
        "WHERE id = :id AND deleted_at IS NOT NULL RETURNING *",
        values,
    )
    if revived is not None:
        return _user(revived), True
    updated = await db.fetch_one(
        "UPDATE users SET name = :name, name_key = :name_key, email = :email, user_type = :user_type, "
        "last_updated_with = :luw, updated_at = :t WHERE id = :id RETURNING *",
        values,
    )
    return _user(updated), False


async def insert_user_if_absent(
    db: Executor, user_id: str, name: str, email: str | None, user_type: str, last_updated_with: str
) -> bool:
    """Register a user seen for the first time (or returning after a delete); True if written."""
    values = {
        "id": user_id, "name": name, "name_key": name.casefold(), "email": email,
        "user_type": user_type, "luw": last_updated_with, "t": now_ms(),
    }
    rows = await db.fetch_all(
        "INSERT INTO users (id, name, name_key, email, user_type, last_updated_with, created_at) "
        "VALUES (:id, :name, :name_key, :email, :user_type, :luw, :t) "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        values,
    )
    if rows:
        return True
    rows = await db.fetch_all(
        "UPDATE users SET name = :name, name_key = :name_key, email = :email, user_type = :user_type, "
        "last_updated_with = :luw, created_at = :t, updated_at = NULL, deleted_at = NULL "
        "WHERE id = :id AND deleted_at IS NOT NULL RETURNING id",
        values,
    )
    return bool(rows)


async def update_user(
    db: Executor, user_id: str, name: str, email: str | None, user_type: str
) -> UserRow | None:
    """Replace a live user's details; None if there is no such user."""
    return _user(
        await db.fetch_one(
            "UPDATE users SET name = :name, name_key = :name_key, email = :email, user_type = :user_type, "
            "last_updated_with = 'update-endpoint', updated_at = :t "
            "WHERE id = :id AND deleted_at IS NULL RETURNING *",
            {
                "id": user_id, "name": name, "name_key": name.casefold(), "email": email,
                "user_type": user_type, "t": now_ms(),
            },
        )
    )


async def delete_user(db: Executor, user_id: str) -> list[str] | None:
    """Soft-delete and drop role assignments; returns the roles that lost the user, None if absent."""
    rows = await db.fetch_all(
        "UPDATE users SET deleted_at = :t WHERE id = :id AND deleted_at IS NULL RETURNING id",
        {"id": user_id, "t": now_ms()},
    )
    if not rows:
        return None
    removed = await db.fetch_all(
        "DELETE FROM role_member WHERE member_type = 'user' AND member_id = :id RETURNING role_id",
        {"id": user_id},
    )
    return [r["role_id"] for r in removed]


async def list_users(
    db: Executor,
    *,
    name: str | None = None,
    ids: list[str] | None = None,
    after: tuple[int, str] | None = None,
    limit: int = 100,
) -> list[UserRow]:
    """Live users by (created_at, id); ``name`` is a case-insensitive substring filter."""
    where = ["deleted_at IS NULL"]
    values: dict = {"limit": limit}
    if name:
        where.append("name_key LIKE :name ESCAPE '\\'")
        values["name"] = f"%{_escape_like(name.casefold())}%"
    if ids is not None:
        if not ids:
            return []
        names = []
        for i, user_id in enumerate(ids):
            values[f"id{i}"] = user_id
            names.append(f":id{i}")
        where.append(f"id IN ({', '.join(names)})")
    if after is not None:
        where.append("(created_at > :after_t OR (created_at = :after_t AND id > :after_id))")
        values["after_t"], values["after_id"] = after
    rows = await db.fetch_all(
        f"SELECT * FROM users WHERE {' AND '.join(where)} ORDER BY created_at, id LIMIT :limit",
        values,
    )
    return [_user(r) for r in rows]


async def search_users(db: Executor, text: str, limit: int) -> list[UserRow]:
    """Candidates whose name, email or id contain ``text`` (case-insensitive)."""
    pattern = f"%{_escape_like(text.casefold())}%"
    rows = await db.fetch_all(
        "SELECT * FROM users WHERE deleted_at IS NULL AND "
        "(name_key LIKE :p ESCAPE '\\' OR LOWER(COALESCE(email, '')) LIKE :p ESCAPE '\\' "
        "OR LOWER(id) LIKE :p ESCAPE '\\') "
        "ORDER BY created_at, id LIMIT :limit",
        {"p": pattern, "limit": limit},
    )
    return [_user(r) for r in rows]


def _escape_like(text: str) -> str:
    """Match ``%``/``_`` in user input literally (every LIKE here says ``ESCAPE '\\'``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
