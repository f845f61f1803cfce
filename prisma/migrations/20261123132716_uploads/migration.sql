-- AlterTable
ALTER TABLE "attachment" ADD COLUMN     "contentType" TEXT;

-- AlterTable
ALTER TABLE "custom_emoji" ADD COLUMN     "isAnimated" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "server_secret" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "server_secret_pkey" PRIMARY KEY ("name")
);
