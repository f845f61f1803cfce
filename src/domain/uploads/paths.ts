// Where files live: the reference's local layout, for both storage backends.
import { randomBytes, randomInt } from 'node:crypto';
import { isSafeKey } from '../../storage/storage.js';

/** `<organization id>/<1-2 hex chars>/<24-char URL-safe token>/<sanitized name>` */
export function newPathId(organizationId: number, sanitizedName: string): string {
  const token = randomBytes(18).toString('base64url');
  return `${organizationId}/${randomInt(256).toString(16)}/${token}/${sanitizedName}`;
}

/** The storage key of an uploaded file. */
export const fileKey = (pathId: string) => `files/${pathId}`;

/** A path id that can name a stored file: safe segments, the first the organization's id. */
export const isValidPathId = (pathId: string) => /^[0-9]+\//.test(pathId) && isSafeKey(pathId);

/** Custom emoji images: `avatars/<organization id>/emoji/images/<file name>` (served as /user_avatars/...). */
export const emojiImagePath = (organizationId: number, fileName: string) => `${organizationId}/emoji/images/${fileName}`;
export const emojiStillPath = (organizationId: number, fileName: string) =>
  `${organizationId}/emoji/images/still/${fileName.replace(/\.[^.]*$/, '')}.png`;
export const avatarKey = (path: string) => `avatars/${path}`;
