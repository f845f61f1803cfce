-- AlterTable: each link gets its message's send time, copied from the message.
ALTER TABLE "message_attachment" ADD COLUMN "dateSent" TIMESTAMP(3);
UPDATE "message_attachment" ma SET "dateSent" = m."dateSent" FROM "message" m WHERE m.id = ma."messageId";
ALTER TABLE "message_attachment" ALTER COLUMN "dateSent" SET NOT NULL;

-- CreateIndex (before the drop, so that a file's links are never without an index)
CREATE INDEX "message_attachment_attachmentId_messageId_dateSent_idx" ON "message_attachment"("attachmentId", "messageId", "dateSent");

-- DropIndex (the new index's prefix)
DROP INDEX "message_attachment_attachmentId_idx";
