-- AlterTable
ALTER TABLE "organization" ADD COLUMN     "uploadQuotaGb" INTEGER,
ADD COLUMN     "uploadSpaceUsed" BIGINT NOT NULL DEFAULT 0;

-- Existing organizations start from the exact total of their files.
UPDATE "organization" o
SET "uploadSpaceUsed" = COALESCE((SELECT SUM(a."size") FROM "attachment" a WHERE a."organizationId" = o."id"), 0);
