-- Users and roles (Lakekeeper §3.1): role names are unique per project (case-insensitive),
-- reverse membership lookups ("which roles is this user/role a member of") need an index,
-- and user listings page by (created_at, id).
CREATE UNIQUE INDEX role_name_per_project ON role (project_id, name_key);
CREATE INDEX role_listing ON role (project_id, created_at, id);
CREATE INDEX role_member_by_member ON role_member (member_type, member_id);
CREATE INDEX users_listing ON users (created_at, id);
CREATE INDEX users_name ON users (name_key);
