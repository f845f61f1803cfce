-- CreateTable
CREATE TABLE "rate_counter" (
    "key" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "windowEnd" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "rate_counter_pkey" PRIMARY KEY ("key")
);
