"""Roles and role membership (users in roles, roles in roles) — data only, no enforcement."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from attrs import frozen

from lakekeeper_host.store.db import Executor, now_ms, rows_with_ids


@frozen
class RoleRow:
    id: str
    project_id: str
    name: str
    description: str | None
    provider_id: str
    source_id: str
    version: int
    created_at: int
    updated_at: int | None


@frozen
class MemberRow:
    """A direct member of a role, hydrated: a user (name/email/type may be unknown) or a role."""

    member_type: str  # user | role
    member_id: str
    name: str | None
    email: str | None = None
    user_type: str | None = None
    provider_id: str | None = None
    source_id: str | None = None


def _role(row) -> RoleRow | None:
    if row is None:
        return None
    return RoleRow(
        id=row["id"],
        project_id=row["project_id"],
        name=row["name"],
        description=row["description"],
        provider_id=row["provider_id"],
        source_id=row["source_id"],
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _in(prefix: str, items: Iterable[str], values: dict) -> str:
    names = []
    for i, item in enumerate(items):
        values[f"{prefix}{i}"] = item
        names.append(f":{prefix}{i}")
    return ", ".join(names)


# ---------------------------------------------------------------- roles


async def create_role(
    db: Executor,
    role_id: str,
    project_id: str,
    name: str,
    description: str | None,
    provider_id: str,
    source_id: str,
) -> RoleRow | None:
    """Insert; None when the name or (provider, source id) is taken in the project."""
    return _role(
        await db.fetch_one(
            "INSERT INTO role (id, project_id, name, name_key, description, provider_id, source_id, created_at) "
            "VALUES (:id, :project_id, :name, :name_key, :description, :provider_id, :source_id, :t) "
            "ON CONFLICT DO NOTHING RETURNING *",
            {
                "id": role_id, "project_id": project_id, "name": name, "name_key": name.casefold(),
                "description": description, "provider_id": provider_id, "source_id": source_id,
                "t": now_ms(),
            },
        )
    )


async def role_name_taken(db: Executor, project_id: str, name: str, *, except_id: str | None = None) -> bool:
    row = await db.fetch_one(
        "SELECT id FROM role WHERE project_id = :p AND name_key = :k AND id <> :except",
        {"p": project_id, "k": name.casefold(), "except": except_id or ""},
    )
    return row is not None


async def source_taken(
    db: Executor, project_id: str, provider_id: str, source_id: str, *, except_id: str | None = None
) -> bool:
    row = await db.fetch_one(
        "SELECT id FROM role WHERE project_id = :p AND provider_id = :pr AND source_id = :s AND id <> :except",
        {"p": project_id, "pr": provider_id, "s": source_id, "except": except_id or ""},
    )
    return row is not None


async def get_role(db: Executor, role_id: str, project_id: str | None = None) -> RoleRow | None:
    """A role by id; with ``project_id`` only if it belongs to that project."""
    if project_id is None:
        return _role(await db.fetch_one("SELECT * FROM role WHERE id = :id", {"id": role_id}))
    return _role(
        await db.fetch_one(
            "SELECT * FROM role WHERE id = :id AND project_id = :p", {"id": role_id, "p": project_id}
        )
    )


async def list_roles(
    db: Executor,
    project_id: str,
    *,
    role_ids: list[str] | None = None,
    source_ids: list[str] | None = None,
    provider_ids: list[str] | None = None,
    after: tuple[int, str] | None = None,
    limit: int = 100,
    visible: Collection[str] | None = None,
) -> list[RoleRow]:
    """Roles of a project in creation order after the keyset ``after``, filtered by the given ids,
    source ids and provider ids, and to ``visible`` (the ones the caller may see) when given."""
    values: dict = {"p": project_id, "limit": limit}
    where = ["project_id = :p"]
    for column, items, prefix in (
        ("id", role_ids, "rid"), ("source_id", source_ids, "sid"), ("provider_id", provider_ids, "pid")
    ):
        if items is not None:
            if not items:
                return []
            where.append(f"{column} IN ({_in(prefix, items, values)})")
    if after is not None:
        where.append("(created_at > :after_t OR (created_at = :after_t AND id > :after_id))")
        values["after_t"], values["after_id"] = after
    rows = await db.fetch_all(
        f"SELECT * FROM {'role' if visible is None else rows_with_ids(db, 'role', visible, values, 'visible')} "
        f"WHERE {' AND '.join(where)} ORDER BY created_at, id LIMIT :limit", values
    )
    return [_role(r) for r in rows]


async def roles_by_ids(db: Executor, role_ids: Iterable[str]) -> dict[str, RoleRow]:
    ids = list(dict.fromkeys(role_ids))
    if not ids:
        return {}
    values: dict = {}
    rows = await db.fetch_all(f"SELECT * FROM role WHERE id IN ({_in('r', ids, values)})", values)
    return {r["id"]: _role(r) for r in rows}


async def search_roles(db: Executor, project_id: str, text: str, limit: int) -> list[RoleRow]:
    pattern = "%" + text.casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = await db.fetch_all(
        "SELECT * FROM role WHERE project_id = :p AND (name_key LIKE :q ESCAPE '\\' "
        "OR LOWER(COALESCE(description, '')) LIKE :q ESCAPE '\\' OR LOWER(source_id) LIKE :q ESCAPE '\\' "
        "OR id = :exact) ORDER BY created_at, id LIMIT :limit",
        {"p": project_id, "q": pattern, "exact": text.strip().lower(), "limit": limit},
    )
    return [_role(r) for r in rows]


async def update_role(
    db: Executor, project_id: str, role_id: str, name: str, description: str | None
) -> RoleRow | None:
    return _role(
        await db.fetch_one(
            "UPDATE role SET name = :name, name_key = :name_key, description = :d, version = version + 1, "
            "updated_at = :t WHERE id = :id AND project_id = :p RETURNING *",
            {
                "id": role_id, "p": project_id, "name": name, "name_key": name.casefold(),
                "d": description, "t": now_ms(),
            },
        )
    )


async def update_source_system(
    db: Executor, project_id: str, role_id: str, provider_id: str, source_id: str
) -> RoleRow | None:
    return _role(
        await db.fetch_one(
            "UPDATE role SET provider_id = :pr, source_id = :s, version = version + 1, updated_at = :t "
            "WHERE id = :id AND project_id = :p RETURNING *",
            {"id": role_id, "p": project_id, "pr": provider_id, "s": source_id, "t": now_ms()},
        )
    )


async def delete_role(db: Executor, project_id: str, role_id: str) -> bool:
    """Delete the role, its member rows (cascade) and its memberships in other roles."""
    rows = await db.fetch_all(
        "DELETE FROM role WHERE id = :id AND project_id = :p RETURNING id", {"id": role_id, "p": project_id}
    )
    if not rows:
        return False
    await db.execute(
        "DELETE FROM role_member WHERE member_type = 'role' AND member_id = :id", {"id": role_id}
    )
    return True


# ---------------------------------------------------------------- membership


async def lock_memberships(db: Executor, project_id: str) -> None:
    """Serialise membership writes per project so two requests cannot race a cycle into the graph.

    PostgreSQL: a transaction-scoped advisory lock. SQLite: ``BEGIN IMMEDIATE`` already
    serialises every write transaction.
    """
    if db.is_postgres:
        await db.execute("SELECT pg_advisory_xact_lock(hashtext(:k))", {"k": f"role-membership:{project_id}"})


async def role_edges(db: Executor, project_id: str) -> list[tuple[str, str]]:
    """All (parent role, member role) edges of a project."""
    rows = await db.fetch_all(
        "SELECT rm.role_id AS parent, rm.member_id AS child FROM role_member rm "
        "JOIN role r ON r.id = rm.role_id WHERE r.project_id = :p AND rm.member_type = 'role'",
        {"p": project_id},
    )
    return [(r["parent"], r["child"]) for r in rows]


async def add_members(db: Executor, role_id: str, members: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Insert (type, id) members; returns those that were not present before."""
    added = []
    t = now_ms()
    for member_type, member_id in members:
        rows = await db.fetch_all(
            "INSERT INTO role_member (role_id, member_type, member_id, created_at) VALUES (:r, :ty, :m, :t) "
            "ON CONFLICT DO NOTHING RETURNING member_id",
            {"r": role_id, "ty": member_type, "m": member_id, "t": t},
        )
        if rows:
            added.append((member_type, member_id))
    return added


async def remove_member(db: Executor, role_id: str, member_type: str, member_id: str) -> bool:
    rows = await db.fetch_all(
        "DELETE FROM role_member WHERE role_id = :r AND member_type = :ty AND member_id = :m RETURNING member_id",
        {"r": role_id, "ty": member_type, "m": member_id},
    )
    return bool(rows)


async def list_members(
    db: Executor,
    role_ids: list[str],
    *,
    member_type: str | None = None,
) -> list[MemberRow]:
    """Direct members of the given roles (deduplicated), users first then roles, each by id."""
    if not role_ids:
        return []
    values: dict = {}
    roles_in = _in("r", role_ids, values)
    out: list[MemberRow] = []
    if member_type in (None, "user"):
        rows = await db.fetch_all(
            "SELECT DISTINCT rm.member_id, u.name, u.email, u.user_type FROM role_member rm "
            "LEFT JOIN users u ON u.id = rm.member_id AND u.deleted_at IS NULL "
            f"WHERE rm.role_id IN ({roles_in}) AND rm.member_type = 'user' ORDER BY rm.member_id",
            values,
        )
        out += [MemberRow("user", r["member_id"], r["name"], r["email"], r["user_type"]) for r in rows]
    if member_type in (None, "role"):
        rows = await db.fetch_all(
            "SELECT DISTINCT rm.member_id, r.name, r.provider_id, r.source_id FROM role_member rm "
            "JOIN role r ON r.id = rm.member_id "
            f"WHERE rm.role_id IN ({roles_in}) AND rm.member_type = 'role' ORDER BY rm.member_id",
            values,
        )
        out += [
            MemberRow("role", r["member_id"], r["name"], provider_id=r["provider_id"], source_id=r["source_id"])
            for r in rows
        ]
    return out


async def roles_with_member(db: Executor, member_type: str, member_id: str, project_id: str) -> list[RoleRow]:
    """Roles of a project that have this user/role as a direct member."""
    rows = await db.fetch_all(
        "SELECT r.* FROM role_member rm JOIN role r ON r.id = rm.role_id "
        "WHERE rm.member_type = :ty AND rm.member_id = :m AND r.project_id = :p ORDER BY r.created_at, r.id",
        {"ty": member_type, "m": member_id, "p": project_id},
    )
    return [_role(r) for r in rows]
