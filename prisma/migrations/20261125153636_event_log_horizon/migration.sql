-- CreateTable
CREATE TABLE "event_log_horizon" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "prunedThrough" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "event_log_horizon_pkey" PRIMARY KEY ("id")
);

-- Its one row: nothing pruned yet.
INSERT INTO "event_log_horizon" ("id", "prunedThrough") VALUES (1, 0);
