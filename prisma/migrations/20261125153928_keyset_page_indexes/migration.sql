-- DropIndex
DROP INDEX "attachment_ownerId_organizationId_idx";

-- DropIndex
DROP INDEX "invitation_referrerId_idx";

-- CreateIndex
CREATE INDEX "attachment_ownerId_organizationId_id_idx" ON "attachment"("ownerId", "organizationId", "id");

-- CreateIndex
CREATE INDEX "invitation_organizationId_invitedAt_id_idx" ON "invitation"("organizationId", "invitedAt", "id");

-- CreateIndex
CREATE INDEX "invitation_referrerId_invitedAt_id_idx" ON "invitation"("referrerId", "invitedAt", "id");
