-- DropIndex
DROP INDEX "attachment_ownerId_idx";

-- CreateIndex
CREATE INDEX "attachment_ownerId_organizationId_idx" ON "attachment"("ownerId", "organizationId");
