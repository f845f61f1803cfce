// Temporary file URLs (uploads.md 2.6): a token that names the file and when it was issued,
// signed with a secret every server process shares, so any process can check it without state.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../app-context.js';
import { badRequest } from '../errors.js';
import { serverSecret } from '../server-secrets.js';
import { findFile, type ServableFile } from './file-access.js';

const SALT = 'user_uploads_';

async function signature(app: AppContext, payload: string): Promise<string> {
  const key = await serverSecret(app.prisma, 'temporary-file-urls');
  return createHmac('sha256', key)
    .update(SALT + payload)
    .digest('base64url');
}

/** `/user_uploads/temporary/<token>/<last path segment>`; the token is upper-case hex. */
export async function temporaryUrl(app: AppContext, pathId: string, now = new Date()): Promise<string> {
  const payload = `${pathId}:${Math.floor(now.getTime() / 1000).toString(36)}`;
  const token = Buffer.from(`${payload}:${await signature(app, payload)}`)
    .toString('hex')
    .toUpperCase();
  return `/user_uploads/temporary/${token}/${pathId.split('/').pop()}`;
}

/** The file a temporary URL names, if its token is genuine and fresh and the name matches. */
export async function resolveTemporaryUrl(app: AppContext, token: string, fileName: string, now = new Date()): Promise<ServableFile> {
  const invalidToken = () => badRequest('Invalid token');
  if (!/^(?:[0-9A-F]{2})+$/.test(token)) throw invalidToken();
  const signed = Buffer.from(token, 'hex').toString('utf8');
  const match = /^(?<pathId>.+):(?<issued>[0-9a-z]+):(?<mac>[A-Za-z0-9_-]+)$/.exec(signed);
  if (!match) throw invalidToken();
  const { pathId, issued, mac } = match.groups!;
  const expected = Buffer.from(await signature(app, `${pathId}:${issued}`));
  if (expected.length !== mac!.length || !timingSafeEqual(expected, Buffer.from(mac!))) throw invalidToken();
  const ageSeconds = now.getTime() / 1000 - parseInt(issued!, 36);
  if (ageSeconds > app.config.uploads.signedAccessTokenValiditySeconds) throw invalidToken();
  if (pathId!.split('/').pop() !== fileName) throw badRequest('Invalid filename');
  const file = await findFile(app, pathId!);
  if (!file) throw invalidToken();
  return file;
}
