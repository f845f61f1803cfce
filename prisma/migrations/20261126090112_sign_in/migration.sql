-- AlterTable
ALTER TABLE "user_account" ADD COLUMN     "apiKeySealed" TEXT,
ADD COLUMN     "passwordHash" TEXT;
