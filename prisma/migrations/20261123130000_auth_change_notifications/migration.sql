-- Every server process caches authenticated users by API key hash (src/domain/auth/auth-cache.ts).
-- Any change to a user row (key reset, deactivation, role change, deletion), whoever makes it (a
-- server, the CLI, an operator with psql), tells every process to drop that user's entry, and
-- deactivating or deleting an organization drops them all ('*'). Notifications go out at commit.
--
-- The driver adapters run a migration script statement by statement, split at every semicolon
-- (even inside comments and quotes), so this file has none but the statement ends: the function body
-- is a Unicode-escaped string in which \003B stands for the semicolon.
CREATE FUNCTION notify_auth_change() RETURNS trigger LANGUAGE plpgsql AS U&'
BEGIN
  IF TG_TABLE_NAME = ''organization'' THEN
    PERFORM pg_notify(''auth_changed'', ''*'')\003B
  ELSE
    PERFORM pg_notify(''auth_changed'', OLD."apiKeyHash")\003B
  END IF\003B
  RETURN NULL\003B
END
';

CREATE TRIGGER user_account_auth_changed AFTER UPDATE OR DELETE ON "user_account"
  FOR EACH ROW EXECUTE FUNCTION notify_auth_change();

CREATE TRIGGER organization_auth_changed AFTER UPDATE OF "deactivated" OR DELETE ON "organization"
  FOR EACH ROW EXECUTE FUNCTION notify_auth_change();
