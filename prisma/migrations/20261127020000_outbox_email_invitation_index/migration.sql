-- An invitation's e-mails were found by scanning the whole outbox: GraphQL's emailDelivery read it
-- for every invitation list that asked, and deleting an invitation (a user's or an organization's
-- deletion) scanned it once per invitation for the foreign key (23,000 invitations: 44 s).
-- CreateIndex
CREATE INDEX "outbox_email_invitationId_idx" ON "outbox_email"("invitationId");
