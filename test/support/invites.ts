// Sending POST /api/v1/invites the way real clients do (form-encoded or multipart), and reading
// back what the organization has stored.
import type { DatabaseClient } from '../../src/db/database.js';
import { expectMatchesOpenApi } from './openapi.js';

export interface RestResult {
  status: number;
  body: Record<string, unknown>;
}

export async function postInvites(
  serverUrl: string,
  authorization: string,
  fields: Record<string, string>,
  options: { multipart?: boolean; query?: Record<string, string> } = {},
): Promise<RestResult> {
  const query = options.query ? `?${new URLSearchParams(options.query)}` : '';
  let body: BodyInit = new URLSearchParams(fields);
  if (options.multipart) {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    body = form;
  }
  const response = await fetch(`${serverUrl}/api/v1/invites${query}`, { method: 'POST', headers: { authorization }, body });
  const result = { status: response.status, body: (await response.json()) as Record<string, unknown> };
  // The excerpt does not describe error bodies with extra fields (its header says so): var_name.
  if (result.body.code !== 'REQUEST_VARIABLE_MISSING') expectMatchesOpenApi('POST', '/invites', result);
  return result;
}

/** The organization's invitations with their channels and groups, oldest first. */
export function storedInvitations(prisma: DatabaseClient, organizationId: number) {
  return prisma.invitation.findMany({
    where: { organizationId },
    orderBy: { id: 'asc' },
    include: { channels: { select: { channelId: true } }, groups: { select: { groupId: true } } },
  });
}

export const invitationFailedBody = (
  msg: string,
  data: { errors?: unknown[]; sent?: boolean; license?: boolean; daily?: boolean } = {},
) => ({
  result: 'error',
  msg,
  errors: data.errors ?? [],
  sent_invitations: data.sent ?? false,
  license_limit_reached: data.license ?? false,
  daily_limit_reached: data.daily ?? false,
  code: 'INVITATION_FAILED',
});

export const badRequestBody = (msg: string) => ({ result: 'error', msg, code: 'BAD_REQUEST' });
