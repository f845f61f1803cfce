-- Every server process caches what permission checks read (src/domain/permissions/permission-cache.ts):
-- organizations' invitation settings with their allowed domains, and which groups, through their
-- subgroups, hold a user. Any change to those tables, whoever makes it (a server, the CLI, an
-- operator with psql), tells every process at commit to drop everything it holds ('*': such changes
-- are rare, and a dropped entry only costs the statement it saved). An organization's upload
-- counter, updated by every upload, changes nothing cached and notifies nobody.
-- No semicolon inside the body (see migration auth_change_notifications): \003B stands for it.
CREATE FUNCTION notify_permissions_changed() RETURNS trigger LANGUAGE plpgsql AS U&'
BEGIN
  PERFORM pg_notify(''permissions_changed'', ''*'')\003B
  RETURN NULL\003B
END
';

CREATE TRIGGER organization_permissions_changed AFTER UPDATE ON "organization"
  FOR EACH ROW WHEN ((to_jsonb(OLD) - 'uploadSpaceUsed') IS DISTINCT FROM (to_jsonb(NEW) - 'uploadSpaceUsed'))
  EXECUTE FUNCTION notify_permissions_changed();

CREATE TRIGGER organization_deleted_permissions_changed AFTER DELETE OR TRUNCATE ON "organization"
  FOR EACH STATEMENT EXECUTE FUNCTION notify_permissions_changed();

CREATE TRIGGER organization_domain_permissions_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "organization_domain"
  FOR EACH STATEMENT EXECUTE FUNCTION notify_permissions_changed();

CREATE TRIGGER user_group_permissions_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "user_group"
  FOR EACH STATEMENT EXECUTE FUNCTION notify_permissions_changed();

CREATE TRIGGER user_group_member_permissions_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "user_group_member"
  FOR EACH STATEMENT EXECUTE FUNCTION notify_permissions_changed();

CREATE TRIGGER user_group_subgroup_permissions_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "user_group_subgroup"
  FOR EACH STATEMENT EXECUTE FUNCTION notify_permissions_changed();
