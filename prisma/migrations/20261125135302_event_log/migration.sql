-- CreateTable
CREATE TABLE "event" (
    "id" BIGSERIAL NOT NULL,
    "position" BIGINT,
    "organizationId" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "payload" JSONB,
    "recipientIds" INTEGER[],
    "queueId" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "event_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "event_queue" (
    "id" UUID NOT NULL,
    "userId" INTEGER NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "eventTypes" TEXT[],
    "everyType" BOOLEAN NOT NULL,
    "lifespanSecs" INTEGER NOT NULL,
    "startAfter" BIGINT NOT NULL,
    "newestPrunedId" BIGINT,
    "lastPolledAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "waitingUntil" TIMESTAMP(3),

    CONSTRAINT "event_queue_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "event_position_key" ON "event"("position");

-- CreateIndex
CREATE INDEX "event_createdAt_idx" ON "event"("createdAt");

-- CreateIndex
CREATE INDEX "event_queue_userId_lastPolledAt_idx" ON "event_queue"("userId", "lastPolledAt");

-- CreateIndex
CREATE INDEX "event_queue_expiresAt_idx" ON "event_queue"("expiresAt");

-- AddForeignKey
ALTER TABLE "event" ADD CONSTRAINT "event_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "event_queue" ADD CONSTRAINT "event_queue_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user_account"("id") ON DELETE CASCADE ON UPDATE CASCADE;
