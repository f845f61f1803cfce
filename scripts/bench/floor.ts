// The floor: the least a server can do to answer the benchmark's requests with the same statuses and
// bodies as the real one. node:http, hand-written SQL through `pg`, no framework, no ORM. It knows
// only the benchmark's requests (and assumes what its data guarantees: an administrator inviting
// new addresses into an organization without limits, no channels).
// Started by scripts/bench/processes.ts with DATABASE_URL, PORT, SERVER_URL, INVITATION_LINK_VALIDITY_MINUTES
// and API_RATE_LIMIT.
import '../../src/db/statement-counter.js';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import pg from 'pg';
import { AUTH_CHANGED_CHANNEL } from '../../src/domain/auth/auth-cache.js';
import { parseRateRules } from '../../src/domain/auth/rate-limit.js';
import { emojiDict } from '../../src/domain/emoji/custom-emoji.js';
import { renderInvitationEmail } from '../../src/domain/email/invitation-email.js';
import { generateConfirmationKey } from '../../src/domain/invitations/confirmation-key.js';
import { namedQuery, SQL_TYPE_PARSERS } from '../../src/db/sql.js';
import { preparedStatementsSetting, preparesStatements } from '../../src/db/prepared-statements.js';
import { encodeCursor } from '../../src/domain/connections.js';
import { unixSecondsOfMs } from '../../src/domain/time.js';
import { ROLE } from '../../src/domain/users/roles.js';
import { ownAttachmentsListStatement } from '../../src/domain/attachments/statements.js';
import { pendingInvitationsStatement } from '../../src/domain/invitations/statements.js';
import { ORGANIZATION_USER_SUMMARIES } from '../../src/domain/users/user-summary.js';
import { ATTACHMENT_PAGE_QUERY, ATTACHMENT_PAGE_SIZE, ATTACHMENTS_QUERY, INVITATIONS_QUERY } from './organization.js';

// The bench leaves the backends of connections named "bench..." out of the database's memory.
// Number arrays parsed as the server's pool parses them.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, application_name: 'bench floor', types: SQL_TYPE_PARSERS });
const serverUrl = process.env.SERVER_URL!;

// The statements the server sends named (src/db/sql.ts) are named here too, under the same setting,
// so that PostgreSQL's share of the ratios compares like with like. Every text here is a constant or
// one of the server's own list statements, so the names stay few.
const preparedStatements = preparedStatementsSetting(process.env.DATABASE_PREPARED_STATEMENTS);
const prepares = preparesStatements(preparedStatements, Boolean(process.env.DATABASE_DIRECT_URL));
const names = new Map<string, string>();
function nameOf(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `floor.${createHash('sha256').update(text).digest('hex').slice(0, 10)}`;
    names.set(text, name);
  }
  return name;
}
function query(db: pg.Pool | pg.PoolClient, text: string, values: unknown[]) {
  return prepares ? namedQuery(db, { name: nameOf(text), text }, values) : db.query(text, values);
}
const validityMinutes = Number(process.env.INVITATION_LINK_VALIDITY_MINUTES || 14400);

interface Caller {
  id: number;
  organizationId: number;
  role: number;
  fullName: string;
  email: string;
}

function send(res: ServerResponse, status: number, body: unknown, contentType = 'application/json') {
  res.writeHead(status, { 'Content-Type': contentType });
  res.end(JSON.stringify(body) + (contentType === 'application/json' ? '\n' : ''));
}

// Authenticated callers by Authorization header, as the server caches them by key: a request
// that hits needs no statement. Any change of a user's credentials or an organization's state
// (the server's notifications, migration auth_change_notifications) empties it.
const callers = new Map<string, Caller>();
const listener = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'bench floor' });
await listener.connect();
listener.on('notification', () => callers.clear());
await listener.query(`LISTEN ${AUTH_CHANGED_CHANNEL}`);

async function authenticate(req: IncomingMessage): Promise<Caller | undefined> {
  const header = req.headers.authorization ?? '';
  const cached = callers.get(header);
  if (cached) return cached;
  const [scheme, encoded] = header.split(' ');
  if (scheme !== 'Basic' || !encoded) return undefined;
  const [email, key] = Buffer.from(encoded, 'base64').toString().split(':');
  const hash = createHash('sha256')
    .update(key ?? '')
    .digest('hex');
  const { rows } = await query(
    pool,
    `SELECT u.id, u."organizationId", u.role, u."fullName", u.email, u."emailKey", u."isActive", o.deactivated
       FROM user_account u JOIN organization o ON o.id = u."organizationId" WHERE u."apiKeyHash" = $1`,
    [hash],
  );
  const user = rows[0];
  if (!user || user.emailKey !== email?.toLowerCase() || !user.isActive || user.deactivated) return undefined;
  callers.set(header, user);
  return user;
}

// The per-user limits (API_RATE_LIMIT, the server's parsing): one upsert of the caller's counters
// per request, as the server makes. The floor's keys are its own, so its requests never count
// against the server's limits on the same database.
const rateRules = parseRateRules(process.env.API_RATE_LIMIT);
const COUNT_HIT = `
  INSERT INTO rate_counter (key, count, "windowEnd")
  SELECT key, 1, $1::timestamp(3) + make_interval(secs => seconds) FROM unnest($2::text[], $3::int[]) AS rule(key, seconds)
  ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN rate_counter."windowEnd" <= $1::timestamp(3) THEN 1 ELSE rate_counter.count + 1 END,
    "windowEnd" = CASE WHEN rate_counter."windowEnd" <= $1::timestamp(3) THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
  RETURNING key, count`;

/** False when one of the caller's windows is over its limit. */
async function withinRateLimits(caller: Caller): Promise<boolean> {
  if (rateRules.length === 0) return true;
  const keys = rateRules.map((rule) => `floor-user:${caller.id}:${rule.windowSeconds}`);
  const { rows } = await query(pool, COUNT_HIT, [new Date().toISOString(), keys, rateRules.map((rule) => rule.windowSeconds)]);
  return rows.every((row) => row.count <= rateRules[keys.indexOf(row.key)]!.maxRequests);
}

/** The caller's files by the server's own statement of the list (rows, messages as arrays), as the server sends it. */
async function ownAttachments(caller: Caller, withDates: boolean) {
  const { text, values } = ownAttachmentsListStatement(caller, withDates);
  const { rows } = await query(pool, text, values);
  return { files: rows.filter((row) => row.id !== null), total: Number(rows[0].uploadSpaceUsed) };
}

async function restAttachments(caller: Caller, res: ServerResponse) {
  const { files, total } = await ownAttachments(caller, false);
  send(res, 200, {
    result: 'success',
    msg: '',
    attachments: files.map((a) => ({
      id: a.id,
      name: a.name,
      path_id: a.pathId,
      size: Number(a.size),
      create_time: a.createTime,
      message_ids: a.messageIds,
    })),
    upload_space_used: total,
  });
}

/** A file as the GraphQL requests ask for it. */
const graphqlFile = (a: Record<string, any>) => ({
  id: a.id,
  name: a.name,
  pathId: a.pathId,
  url: `${serverUrl}/user_uploads/${a.pathId}`,
  size: Number(a.size),
  createTime: a.createTime,
  messages: a.messageIds.map((id: number, i: number) => ({ id, dateSent: a.messageTimes[i] })),
});

async function graphqlAttachments(caller: Caller, res: ServerResponse) {
  const { files, total } = await ownAttachments(caller, true);
  send(
    res,
    200,
    { data: { attachments: { uploadSpaceUsed: total, attachments: files.map(graphqlFile) } } },
    'application/graphql-response+json; charset=utf-8',
  );
}

/** The first page of the caller's files: the server's own statement (one extra row says whether more follow). */
async function graphqlAttachmentPage(caller: Caller, res: ServerResponse) {
  const { text, values } = ownAttachmentsListStatement(caller, true, ATTACHMENT_PAGE_SIZE + 1);
  const { rows } = await query(pool, text, values);
  const files = rows.filter((row) => row.id !== null);
  const nodes = files.slice(0, ATTACHMENT_PAGE_SIZE).map(graphqlFile);
  const last = nodes.at(-1);
  const pageInfo = {
    endCursor: last ? encodeCursor({ name: 'attachment', columns: [], descending: false }, [last.id]) : null,
    hasNextPage: files.length > ATTACHMENT_PAGE_SIZE,
  };
  send(res, 200, { data: { me: { attachmentPage: { nodes, pageInfo } } } }, 'application/graphql-response+json; charset=utf-8');
}

const ROLE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(ROLE).map(([name, code]) => [code, name]));
const secondsOrNull = (ms: number | null) => (ms === null ? null : unixSecondsOfMs(ms));

/**
 * An administrator's pending invitations, newest first, each with its referrer: the server's own
 * statements of the list (as for the file lists), its rows mapped straight to the answer. The caller
 * is their own invitations' referrer; other referrers are read in one statement, as the server does.
 */
async function graphqlInvitations(caller: Caller, res: ServerResponse) {
  const { text, values } = pendingInvitationsStatement(caller);
  const { rows } = await query(pool, text, values);
  const referrers = new Map([[caller.id, { id: caller.id, fullName: caller.fullName, email: caller.email }]]);
  const others = [...new Set(rows.map((row) => row.referrerId as number))].filter((id) => id !== caller.id);
  if (others.length > 0) {
    const found = await query(pool, ORGANIZATION_USER_SUMMARIES.text, [caller.organizationId, others]);
    for (const user of found.rows) referrers.set(user.id, { id: user.id, fullName: user.fullName, email: user.email });
  }
  const invitations = rows.map((row) => ({
    id: row.id,
    email: row.email,
    invitedAs: ROLE_NAMES[row.invitedAs],
    invitedAt: secondsOrNull(row.invitedAtMs),
    expiresAt: secondsOrNull(row.expiresAtMs),
    status: 'PENDING',
    referrer: referrers.get(row.referrerId),
  }));
  send(res, 200, { data: { invitations } }, 'application/graphql-response+json; charset=utf-8');
}

async function deactivateEmoji(caller: Caller, name: string, res: ServerResponse) {
  const missing = () => send(res, 404, { result: 'error', msg: `Emoji '${name}' does not exist`, code: 'BAD_REQUEST' });
  const { rows } = await query(
    pool,
    `SELECT id, "organizationId", name, deactivated, "authorId", "fileName" FROM custom_emoji
      WHERE "organizationId" = $1 AND name = $2 AND NOT deactivated ORDER BY id LIMIT 1`,
    [caller.organizationId, name],
  );
  const emoji = rows[0];
  if (!emoji) return missing();
  if (caller.role > 200 && emoji.authorId !== caller.id) {
    return send(res, 400, { result: 'error', msg: 'Must be an organization administrator or emoji author', code: 'BAD_REQUEST' });
  }
  const audit = { before: emojiDict(emoji), after: emojiDict({ ...emoji, deactivated: true }) };
  const { rowCount } = await query(
    pool,
    `WITH updated AS (UPDATE custom_emoji SET deactivated = true WHERE id = $1 AND NOT deactivated
                      RETURNING id, "organizationId", name, deactivated, "authorId", "fileName", "isAnimated"),
     event AS (INSERT INTO event ("organizationId", type, payload, "recipientIds")
               SELECT $2, 'realm_emoji', jsonb_build_object('change', 'deactivated', 'emoji', to_jsonb(updated)), '{}' FROM updated)
     INSERT INTO audit_log_entry ("organizationId", "actorId", "eventType", "eventTime", "extraData")
     SELECT $2, $3, 'REALM_EMOJI_REMOVED', now() AT TIME ZONE 'UTC', $4::jsonb FROM updated`,
    [emoji.id, caller.organizationId, caller.id, JSON.stringify(audit)],
  );
  if (rowCount === 0) return missing();
  send(res, 200, { result: 'success', msg: '' });
}

async function invite(caller: Caller, body: URLSearchParams, res: ServerResponse) {
  const emails = [
    ...new Set(
      (body.get('invitee_emails') ?? '')
        .split(/[,\n]/)
        .map((e) => e.trim())
        .filter(Boolean),
    ),
  ];
  const now = new Date();
  const expiresAt = new Date(now.getTime() + validityMinutes * 60_000);
  const client = await pool.connect();
  try {
    // The lock in BEGIN's round trip, as the server takes it (the id comes from the floor's own statement).
    const [, locked] = (await client.query(
      `BEGIN; SELECT name FROM organization WHERE id = ${Math.trunc(caller.organizationId)} FOR UPDATE`,
    )) as unknown as pg.QueryResult[];
    const org = locked!.rows[0];
    const existing = await query(client, `SELECT 1 FROM user_account WHERE "organizationId" = $1 AND "emailKey" = ANY($2)`, [
      caller.organizationId,
      emails.map((e) => e.toLowerCase()),
    ]);
    if (existing.rowCount) throw new Error('the floor invites new addresses only');
    const keys = emails.map(() => generateConfirmationKey());
    const created = await query(
      client,
      `INSERT INTO invitation ("organizationId", email, "referrerId", "invitedAs", "invitedAt", "expiresAt", "confirmationKey")
       SELECT $1, email, $2, $3, $4, $5, key FROM unnest($6::text[], $7::text[]) AS t(email, key) RETURNING id, email, "confirmationKey"`,
      [caller.organizationId, caller.id, Number(body.get('invite_as') ?? 400), now, expiresAt, emails, keys],
    );
    const rendered = created.rows.map((row) =>
      renderInvitationEmail({
        referrerName: caller.fullName,
        referrerEmail: caller.email,
        organizationName: org.name,
        link: `${serverUrl}/accounts/do_confirm/${row.confirmationKey}`,
        expiresAt,
      }),
    );
    await query(
      client,
      // Queued like the server's, but never due: the server's worker (same database) must not spend
      // the floor's rounds delivering the floor's e-mails.
      // With the invites_changed event for the organization's owners and administrators and the inviter.
      `WITH event AS (
         INSERT INTO event ("organizationId", type, "recipientIds")
         SELECT $1, 'invites_changed', array(SELECT id FROM user_account WHERE "organizationId" = $1 AND "isActive" AND role <= 200 UNION SELECT $8 ORDER BY 1))
       INSERT INTO outbox_email ("organizationId", "invitationId", kind, "toAddress", subject, "textBody", "htmlBody", "createdAt", "nextAttemptAt")
       SELECT $1, id, 'invitation', address, subject, text, html, $2, '9999-12-31'
         FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[]) AS t(id, address, subject, text, html)`,
      [
        caller.organizationId,
        now,
        created.rows.map((r) => r.id),
        created.rows.map((r) => r.email),
        rendered.map((r) => r.subject),
        rendered.map((r) => r.text),
        rendered.map((r) => r.html),
        caller.id,
      ],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
  send(res, 200, { result: 'success', msg: '' });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  const body = await readBody(req);
  if (req.url === '/health') return send(res, 200, { status: 'ok' });
  const caller = await authenticate(req);
  if (!caller) return send(res, 401, { result: 'error', msg: 'Invalid API key', code: 'UNAUTHORIZED' });
  if (!(await withinRateLimits(caller)))
    return send(res, 429, { result: 'error', msg: 'API usage exceeded rate limit', code: 'RATE_LIMIT_HIT' });
  const emoji = /^\/api\/v1\/realm\/emoji\/([^/]+)$/.exec(req.url ?? '');
  if (req.method === 'GET' && req.url === '/api/v1/attachments') return restAttachments(caller, res);
  // The probe beside the invitations (its body is not compared).
  if (req.method === 'GET' && req.url === '/api/v1/users/me')
    return send(res, 200, { result: 'success', msg: '', user_id: caller.id, role: caller.role });
  const query = req.method === 'POST' && req.url === '/graphql' ? JSON.parse(body).query : undefined;
  if (query === ATTACHMENTS_QUERY) return graphqlAttachments(caller, res);
  if (query === ATTACHMENT_PAGE_QUERY) return graphqlAttachmentPage(caller, res);
  if (query === INVITATIONS_QUERY) return graphqlInvitations(caller, res);
  if (req.method === 'DELETE' && emoji) return deactivateEmoji(caller, decodeURIComponent(emoji[1]!), res);
  if (req.method === 'POST' && req.url === '/api/v1/invites') return invite(caller, new URLSearchParams(body), res);
  send(res, 404, { result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' });
}

const server = createServer((req, res) => {
  handle(req, res).catch((error) => {
    console.error(error);
    if (!res.headersSent) send(res, 500, { result: 'error', msg: String(error), code: 'BAD_REQUEST' });
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => void Promise.all([pool.end(), listener.end()]).then(() => process.exit(0))));
