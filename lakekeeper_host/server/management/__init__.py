"""The management features: bootstrap, projects, users, roles, permissions, task queues and tasks, table
maintenance, statistics, and the operator's authorizer reconciliation and key rotation.

They build on the shared helpers at the root of ``server/`` (authorize, resolve, names, pagination,
settled_write, events, idempotency) and on the catalog packages beside this one; nothing there imports
from here.
"""
