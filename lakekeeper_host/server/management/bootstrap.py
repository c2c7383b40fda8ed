"""The server itself: one-time bootstrap and ``GET /management/v1/info`` (Lakekeeper §1.6)."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import lakekeeper_host
from lakekeeper_host import __version__
from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.server.management.projects import DEFAULT_PROJECT_NAME, after_project_created
from lakekeeper_host.server.management.users import USER_TYPES, nameless_user
from lakekeeper_host.server.security.authn import principal_type
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import users as user_store
from lakekeeper_host.store.server import get_or_create_server, mark_bootstrapped

# the user record written for the bootstrapping caller, as Lakekeeper marks it
BOOTSTRAP_LAST_UPDATED_WITH = "update-endpoint"


async def bootstrap(
    state: AppState,
    meta: RequestMetadata,
    *,
    accept_terms_of_use: bool,
    is_operator: bool = False,
    user_name: str | None = None,
    user_email: str | None = None,
    user_type: str | None = None,
) -> None:
    """Bootstrap once: mark the server bootstrapped, record an authenticated caller as a user
    (``user-name``/``user-email``/``user-type`` win over what the token says), make the caller
    the server's admin (or operator) in the authorizer, then create the default project.

    Anonymous callers (no identity provider configured) get no user record; the ``user-*``
    fields are then ignored, as in Lakekeeper.
    """
    # ------------------------------------------------ VALIDATIONS
    if not accept_terms_of_use:
        raise bad_request("You must accept the terms of use (accept-terms-of-use: true)", "TermsOfUseNotAccepted")
    if user_type is not None and user_type not in USER_TYPES:
        raise bad_request(
            f"Invalid request body: user-type must be 'human' or 'application', got {user_type!r} @ body.user-type",
            "InvalidUserType",
        )
    actor = meta.actor

    # ------------------------------------------------ BUSINESS LOGIC
    async with state.store.transaction() as tx:
        if not await mark_bootstrapped(tx):
            raise CatalogError(400, "CatalogAlreadyBootstrapped", "Catalog is already bootstrapped")
        if actor.user_id is not None:
            await user_store.create_or_update_user(
                tx,
                actor.user_id,
                user_name or actor.name or nameless_user(actor.user_id),
                user_email or actor.email,
                user_type or principal_type(actor) or "application",
                BOOTSTRAP_LAST_UPDATED_WITH,
            )
        # AUTHZ: the authorizer records the first admin; failing here undoes the bootstrap
        grant_server_role = getattr(state.authorizer, "bootstrap", None)
        if grant_server_role is not None:
            await grant_server_role(actor, is_operator)
    if state.settings.host.enable_default_project:
        project_id = state.settings.host.default_project_id
        await project_store.create_project(state.store, project_id, DEFAULT_PROJECT_NAME)
        await after_project_created(state, meta, project_id)


def authz_backend_name(configured: str) -> str:
    """Lakekeeper's spelling in ``/management/v1/info``: ``allow-all`` for the built-in, else the
    authorizer's name (``openfga``)."""
    return "allow-all" if configured.lower() in ("allowall", "allow-all") else configured


CONSOLE_EDITION = "lakekeeper-host-console"  # the console this package serves at /ui


async def server_info(state: AppState) -> dict[str, Any]:
    host = state.settings.host
    server = await get_or_create_server(state.store)
    build: dict[str, Any] = {}  # as Lakekeeper: left out when unknown (a server installed from a wheel)
    if commit := commit_sha():
        build["lakekeeper-commit-sha"] = commit
    if host.ui.enabled:
        build["console"] = {"edition": CONSOLE_EDITION, "version": __version__,
                            **({"commit-sha": commit} if commit else {})}
    return {
        "version": __version__,
        "lakekeeper-version": __version__,
        **build,
        "server-id": server.server_id,
        "bootstrapped": server.bootstrapped,
        "default-project-id": host.default_project_id if host.enable_default_project else None,
        "authz-backend": authz_backend_name(host.authz_backend),
        "aws-system-identities-enabled": host.enable_aws_system_credentials,
        "azure-system-identities-enabled": host.enable_azure_system_credentials,
        "gcp-system-identities-enabled": host.enable_gcp_system_credentials,
        "queues": sorted(s.name for s in state.registry.unique(state.registry.task_queues)),
        "license-status": {"license-type": "Apache-2.0", "valid": True, "audience": "lakekeeper-core"},
        "managed-role-providers": [],
    }


_SHA = re.compile(r"^[0-9a-f]{40}$")


@functools.cache
def commit_sha() -> str | None:
    """The git commit the running code was checked out at (``lakekeeper-commit-sha`` of /info), when it
    runs from a checkout; read from ``.git`` once (no git binary needed), None otherwise."""
    root = Path(lakekeeper_host.__file__).resolve().parents[1]
    git = root / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = (root / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if _SHA.match(head):
            return head
        ref = head.removeprefix("ref:").strip()
        common = (git / (git / "commondir").read_text().strip()).resolve() if (git / "commondir").is_file() else git
        for base in (git, common):
            if (base / ref).is_file():
                return (base / ref).read_text().strip()
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                sha, _, name = line.partition(" ")
                if name == ref and _SHA.match(sha):
                    return sha
    except OSError:
        return None
    return None
