-- AlterTable
ALTER TABLE "outbox_email" ALTER COLUMN "organizationId" DROP NOT NULL;

-- CreateTable
CREATE TABLE "user_session" (
    "id" SERIAL NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "userId" INTEGER NOT NULL,
    "passwordFingerprint" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "user_session_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "user_session_tokenHash_key" ON "user_session"("tokenHash");

-- CreateIndex
CREATE INDEX "user_session_userId_idx" ON "user_session"("userId");

-- CreateIndex
CREATE INDEX "user_session_expiresAt_idx" ON "user_session"("expiresAt");

-- AddForeignKey
ALTER TABLE "user_session" ADD CONSTRAINT "user_session_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user_account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A session that ends (logout, expiry's cleanup, its user's deletion) tells every process at commit,
-- on the authentication cache's channel, so that the long-lived requests it authenticated end
-- (src/domain/auth/held-credentials.ts). Its user's row changes (a password change or reset, a
-- deactivation) reach them through that row's own trigger. No semicolon inside the body (see
-- migration auth_change_notifications): \003B stands for it.
CREATE FUNCTION notify_session_end() RETURNS trigger LANGUAGE plpgsql AS U&'
BEGIN
  PERFORM pg_notify(''auth_changed'', ''session:'' || OLD.id)\003B
  RETURN NULL\003B
END
';

CREATE TRIGGER user_session_ended AFTER DELETE ON "user_session"
  FOR EACH ROW EXECUTE FUNCTION notify_session_end();
