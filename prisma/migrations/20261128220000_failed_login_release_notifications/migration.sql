-- Every server process keeps the client addresses locked out by failed logins in memory, from the
-- notifications the failures send (src/domain/auth/rate-limit.ts). Deleting a failure counter
-- (an operator's release, whoever runs it) tells every process to forget its lockout ("0 <key>"),
-- and emptying the table forgets them all ("0 *"). Notifications go out at commit.
--
-- The driver adapters run a migration script statement by statement, split at every semicolon
-- (even inside comments and quotes), so this file has none but the statement ends: the function body
-- is a Unicode-escaped string in which \003B stands for the semicolon.
CREATE FUNCTION notify_failed_login_release() RETURNS trigger LANGUAGE plpgsql AS U&'
BEGIN
  IF TG_OP = ''TRUNCATE'' THEN
    PERFORM pg_notify(''failed_login_lockout'', ''0 *'')\003B
  ELSE
    PERFORM pg_notify(''failed_login_lockout'', ''0 '' || OLD.key)\003B
  END IF\003B
  RETURN NULL\003B
END
';

CREATE TRIGGER rate_counter_failed_login_released AFTER DELETE ON "rate_counter"
  FOR EACH ROW WHEN (OLD.key LIKE 'failed-login:%') EXECUTE FUNCTION notify_failed_login_release();

CREATE TRIGGER rate_counter_emptied AFTER TRUNCATE ON "rate_counter"
  FOR EACH STATEMENT EXECUTE FUNCTION notify_failed_login_release();
