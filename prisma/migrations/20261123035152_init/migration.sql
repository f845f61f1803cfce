-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "InvitationStatus" AS ENUM ('PENDING', 'ACCEPTED', 'REVOKED');

-- CreateEnum
CREATE TYPE "OutboxStatus" AS ENUM ('PENDING', 'SENT', 'FAILED');

-- CreateTable
CREATE TABLE "organization" (
    "id" SERIAL NOT NULL,
    "stringId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "dateCreated" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "inviteRequired" BOOLEAN NOT NULL DEFAULT true,
    "emailsRestrictedToDomains" BOOLEAN NOT NULL DEFAULT false,
    "disallowDisposableEmailAddresses" BOOLEAN NOT NULL DEFAULT true,
    "waitingPeriodThreshold" INTEGER NOT NULL DEFAULT 0,
    "maxInvites" INTEGER,
    "licenseLimit" INTEGER,
    "welcomeMessageCustomText" TEXT NOT NULL DEFAULT '',
    "canInviteUsersGroupId" INTEGER,
    "canAddSubscribersGroupId" INTEGER,
    "canManageAllGroupsId" INTEGER,
    "canAddCustomEmojiGroupId" INTEGER,

    CONSTRAINT "organization_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "organization_domain" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "domain" TEXT NOT NULL,
    "allowSubdomains" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "organization_domain_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_account" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "emailKey" TEXT NOT NULL,
    "fullName" TEXT NOT NULL,
    "role" INTEGER NOT NULL DEFAULT 400,
    "isBot" BOOLEAN NOT NULL DEFAULT false,
    "botType" INTEGER,
    "systemBot" TEXT,
    "isActive" BOOLEAN NOT NULL DEFAULT true,
    "dateJoined" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "apiKeyHash" TEXT NOT NULL,

    CONSTRAINT "user_account_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "channel" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "inviteOnly" BOOLEAN NOT NULL DEFAULT false,
    "isWebPublic" BOOLEAN NOT NULL DEFAULT false,
    "isArchived" BOOLEAN NOT NULL DEFAULT false,
    "isDefault" BOOLEAN NOT NULL DEFAULT false,
    "canAddSubscribersGroupId" INTEGER NOT NULL,
    "canSubscribeGroupId" INTEGER NOT NULL,
    "canAdministerChannelGroupId" INTEGER NOT NULL,

    CONSTRAINT "channel_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subscription" (
    "userId" INTEGER NOT NULL,
    "channelId" INTEGER NOT NULL,

    CONSTRAINT "subscription_pkey" PRIMARY KEY ("userId","channelId")
);

-- CreateTable
CREATE TABLE "user_group" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "name" TEXT,
    "description" TEXT NOT NULL DEFAULT '',
    "isSystemGroup" BOOLEAN NOT NULL DEFAULT false,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "canAddMembersGroupId" INTEGER,
    "canManageGroupId" INTEGER,

    CONSTRAINT "user_group_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_group_member" (
    "groupId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,

    CONSTRAINT "user_group_member_pkey" PRIMARY KEY ("groupId","userId")
);

-- CreateTable
CREATE TABLE "user_group_subgroup" (
    "supergroupId" INTEGER NOT NULL,
    "subgroupId" INTEGER NOT NULL,

    CONSTRAINT "user_group_subgroup_pkey" PRIMARY KEY ("supergroupId","subgroupId")
);

-- CreateTable
CREATE TABLE "custom_emoji" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "authorId" INTEGER,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "fileName" TEXT NOT NULL,

    CONSTRAINT "custom_emoji_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "attachment" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "ownerId" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "pathId" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "createTime" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "attachment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "message" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "senderId" INTEGER NOT NULL,
    "channelId" INTEGER,
    "topic" TEXT NOT NULL DEFAULT '',
    "content" TEXT NOT NULL,
    "dateSent" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "direct_message_recipient" (
    "messageId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,

    CONSTRAINT "direct_message_recipient_pkey" PRIMARY KEY ("messageId","userId")
);

-- CreateTable
CREATE TABLE "message_attachment" (
    "messageId" INTEGER NOT NULL,
    "attachmentId" INTEGER NOT NULL,

    CONSTRAINT "message_attachment_pkey" PRIMARY KEY ("messageId","attachmentId")
);

-- CreateTable
CREATE TABLE "invitation" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "referrerId" INTEGER NOT NULL,
    "invitedAs" INTEGER NOT NULL,
    "invitedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3),
    "status" "InvitationStatus" NOT NULL DEFAULT 'PENDING',
    "includeRealmDefaultSubscriptions" BOOLEAN NOT NULL DEFAULT false,
    "notifyReferrerOnJoin" BOOLEAN NOT NULL DEFAULT true,
    "welcomeMessageCustomText" TEXT,
    "confirmationKey" TEXT NOT NULL,
    "createdUserId" INTEGER,

    CONSTRAINT "invitation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "invitation_channel" (
    "invitationId" INTEGER NOT NULL,
    "channelId" INTEGER NOT NULL,

    CONSTRAINT "invitation_channel_pkey" PRIMARY KEY ("invitationId","channelId")
);

-- CreateTable
CREATE TABLE "invitation_group" (
    "invitationId" INTEGER NOT NULL,
    "groupId" INTEGER NOT NULL,

    CONSTRAINT "invitation_group_pkey" PRIMARY KEY ("invitationId","groupId")
);

-- CreateTable
CREATE TABLE "outbox_email" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "invitationId" INTEGER,
    "kind" TEXT NOT NULL,
    "toAddress" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "textBody" TEXT NOT NULL,
    "htmlBody" TEXT NOT NULL,
    "status" "OutboxStatus" NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    "nextAttemptAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sentAt" TIMESTAMP(3),

    CONSTRAINT "outbox_email_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_log_entry" (
    "id" SERIAL NOT NULL,
    "organizationId" INTEGER NOT NULL,
    "actorId" INTEGER,
    "eventType" TEXT NOT NULL,
    "eventTime" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "extraData" JSONB NOT NULL,

    CONSTRAINT "audit_log_entry_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "organization_stringId_key" ON "organization"("stringId");

-- CreateIndex
CREATE UNIQUE INDEX "organization_domain_organizationId_domain_key" ON "organization_domain"("organizationId", "domain");

-- CreateIndex
CREATE UNIQUE INDEX "user_account_apiKeyHash_key" ON "user_account"("apiKeyHash");

-- CreateIndex
CREATE UNIQUE INDEX "user_account_organizationId_emailKey_key" ON "user_account"("organizationId", "emailKey");

-- CreateIndex
CREATE UNIQUE INDEX "channel_organizationId_name_key" ON "channel"("organizationId", "name");

-- CreateIndex
CREATE INDEX "subscription_channelId_idx" ON "subscription"("channelId");

-- CreateIndex
CREATE UNIQUE INDEX "user_group_organizationId_name_key" ON "user_group"("organizationId", "name");

-- CreateIndex
CREATE INDEX "user_group_member_userId_idx" ON "user_group_member"("userId");

-- CreateIndex
CREATE INDEX "user_group_subgroup_subgroupId_idx" ON "user_group_subgroup"("subgroupId");

-- CreateIndex
CREATE INDEX "custom_emoji_organizationId_name_idx" ON "custom_emoji"("organizationId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "attachment_pathId_key" ON "attachment"("pathId");

-- CreateIndex
CREATE INDEX "attachment_organizationId_idx" ON "attachment"("organizationId");

-- CreateIndex
CREATE INDEX "attachment_ownerId_idx" ON "attachment"("ownerId");

-- CreateIndex
CREATE INDEX "message_organizationId_idx" ON "message"("organizationId");

-- CreateIndex
CREATE INDEX "direct_message_recipient_userId_idx" ON "direct_message_recipient"("userId");

-- CreateIndex
CREATE INDEX "message_attachment_attachmentId_idx" ON "message_attachment"("attachmentId");

-- CreateIndex
CREATE UNIQUE INDEX "invitation_confirmationKey_key" ON "invitation"("confirmationKey");

-- CreateIndex
CREATE INDEX "invitation_organizationId_status_idx" ON "invitation"("organizationId", "status");

-- CreateIndex
CREATE INDEX "invitation_referrerId_idx" ON "invitation"("referrerId");

-- CreateIndex
CREATE INDEX "outbox_email_status_nextAttemptAt_idx" ON "outbox_email"("status", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "outbox_email_organizationId_kind_createdAt_idx" ON "outbox_email"("organizationId", "kind", "createdAt");

-- CreateIndex
CREATE INDEX "audit_log_entry_organizationId_eventTime_idx" ON "audit_log_entry"("organizationId", "eventTime");

-- AddForeignKey
ALTER TABLE "organization" ADD CONSTRAINT "organization_canInviteUsersGroupId_fkey" FOREIGN KEY ("canInviteUsersGroupId") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "organization" ADD CONSTRAINT "organization_canAddSubscribersGroupId_fkey" FOREIGN KEY ("canAddSubscribersGroupId") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "organization" ADD CONSTRAINT "organization_canManageAllGroupsId_fkey" FOREIGN KEY ("canManageAllGroupsId") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "organization" ADD CONSTRAINT "organization_canAddCustomEmojiGroupId_fkey" FOREIGN KEY ("canAddCustomEmojiGroupId") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "organization_domain" ADD CONSTRAINT "organization_domain_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_account" ADD CONSTRAINT "user_account_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel" ADD CONSTRAINT "channel_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel" ADD CONSTRAINT "channel_canAddSubscribersGroupId_fkey" FOREIGN KEY ("canAddSubscribersGroupId") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel" ADD CONSTRAINT "channel_canSubscribeGroupId_fkey" FOREIGN KEY ("canSubscribeGroupId") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel" ADD CONSTRAINT "channel_canAdministerChannelGroupId_fkey" FOREIGN KEY ("canAdministerChannelGroupId") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user_account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_channelId_fkey" FOREIGN KEY ("channelId") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_canAddMembersGroupId_fkey" FOREIGN KEY ("canAddMembersGroupId") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_canManageGroupId_fkey" FOREIGN KEY ("canManageGroupId") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_member" ADD CONSTRAINT "user_group_member_groupId_fkey" FOREIGN KEY ("groupId") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_member" ADD CONSTRAINT "user_group_member_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user_account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_subgroup" ADD CONSTRAINT "user_group_subgroup_supergroupId_fkey" FOREIGN KEY ("supergroupId") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_subgroup" ADD CONSTRAINT "user_group_subgroup_subgroupId_fkey" FOREIGN KEY ("subgroupId") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_emoji" ADD CONSTRAINT "custom_emoji_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_emoji" ADD CONSTRAINT "custom_emoji_authorId_fkey" FOREIGN KEY ("authorId") REFERENCES "user_account"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment" ADD CONSTRAINT "attachment_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment" ADD CONSTRAINT "attachment_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "user_account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_senderId_fkey" FOREIGN KEY ("senderId") REFERENCES "user_account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_channelId_fkey" FOREIGN KEY ("channelId") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "direct_message_recipient" ADD CONSTRAINT "direct_message_recipient_messageId_fkey" FOREIGN KEY ("messageId") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "direct_message_recipient" ADD CONSTRAINT "direct_message_recipient_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user_account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message_attachment" ADD CONSTRAINT "message_attachment_messageId_fkey" FOREIGN KEY ("messageId") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message_attachment" ADD CONSTRAINT "message_attachment_attachmentId_fkey" FOREIGN KEY ("attachmentId") REFERENCES "attachment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation" ADD CONSTRAINT "invitation_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation" ADD CONSTRAINT "invitation_referrerId_fkey" FOREIGN KEY ("referrerId") REFERENCES "user_account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation" ADD CONSTRAINT "invitation_createdUserId_fkey" FOREIGN KEY ("createdUserId") REFERENCES "user_account"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation_channel" ADD CONSTRAINT "invitation_channel_invitationId_fkey" FOREIGN KEY ("invitationId") REFERENCES "invitation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation_channel" ADD CONSTRAINT "invitation_channel_channelId_fkey" FOREIGN KEY ("channelId") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation_group" ADD CONSTRAINT "invitation_group_invitationId_fkey" FOREIGN KEY ("invitationId") REFERENCES "invitation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation_group" ADD CONSTRAINT "invitation_group_groupId_fkey" FOREIGN KEY ("groupId") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "outbox_email" ADD CONSTRAINT "outbox_email_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "outbox_email" ADD CONSTRAINT "outbox_email_invitationId_fkey" FOREIGN KEY ("invitationId") REFERENCES "invitation"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "audit_log_entry" ADD CONSTRAINT "audit_log_entry_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "audit_log_entry" ADD CONSTRAINT "audit_log_entry_actorId_fkey" FOREIGN KEY ("actorId") REFERENCES "user_account"("id") ON DELETE SET NULL ON UPDATE CASCADE;
