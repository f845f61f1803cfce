// What lists show of a user beside what they list, and reading it for users of one organization.
import { namedStatement, type Sql } from '../../db/sql.js';
import { distinctRowIds } from '../ids.js';

/** What lists show of a user beside what they list (an invitation's referrer, an emoji's author). */
export interface UserSummary {
  id: number;
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
}

const ORGANIZATION_USER_SUMMARIES = namedStatement(
  'users.summaries',
  'SELECT id, email, "fullName", role, "isBot" FROM user_account WHERE "organizationId" = $1 AND id = ANY($2::int[]) ORDER BY id',
);

/**
 * Those of `ids` that are users of the organization, by ascending id, deactivated ones too (lists show
 * them as referrers and authors); another organization's users name nothing.
 */
export async function organizationUserSummaries(sql: Sql, organizationId: number, ids: number[]): Promise<UserSummary[]> {
  const rowIds = distinctRowIds(ids);
  if (rowIds.length === 0) return [];
  return sql.rows<UserSummary>(ORGANIZATION_USER_SUMMARIES, [organizationId, rowIds]);
}
