-- CreateIndex
CREATE INDEX "outbox_email_status_organizationId_nextAttemptAt_id_idx" ON "outbox_email"("status", "organizationId", "nextAttemptAt", "id");
