// The soak's invariants: pure functions from the recorded history (requests and fault spans), the
// database and storage read into plain data once the fleet has drained (snapshot.ts), the e-mails
// the receivers accepted and what each live client received, to the violations found, with how many
// items each check examined. A change acknowledged (ok) must be there; a refused one must not; one of
// unknown outcome may be either, but whole (an invitation of several addresses is all or none).
import type { FaultSpan, Operation, RecordedHistory } from './history.js';

/** What one check examined and what it found broken. */
export interface CheckResult {
  name: string;
  examined: number;
  /** What `examined` counts ("requests", "e-mails", ...). */
  unit: string;
  violations: string[];
  /** Further counts for the report (re-deliveries and what excused them, ...). */
  notes?: string;
}

/** The database and the storage after the drain, as plain data. */
export interface Snapshot {
  invitations: { id: number; organizationId: number; email: string; status: string }[];
  accounts: { organizationId: number; email: string }[];
  emoji: { organizationId: number; name: string; deactivated: boolean }[];
  attachments: { id: number; organizationId: number; name: string; pathId: string; size: number }[];
  /** Each soak organization's upload_space_used. */
  uploadSpaceUsed: { organizationId: number; used: number }[];
  /** Every stored file's size, by its path under the uploads' files folder. */
  storedFiles: Map<string, number>;
  /** The outbox's rows; `messageId` is the one every copy of the row must carry. */
  outbox: { id: number; toAddress: string; status: string; attempts: number; lastError: string | null; messageId: string }[];
  events: { position: number; organizationId: number; recipientIds: number[]; type: string }[];
}

/** One copy of an e-mail as a receiver accepted it. */
export interface DeliveredEmail {
  to: string;
  messageId: string | undefined;
  text: string;
  /** When the receiver accepted it (Date.now()). */
  at: number;
  /** The server process whose receiver took it (each server has its own). */
  sentBy: string;
}

/** What a live client received, as plain data. */
export interface LiveRecord {
  name: string;
  organizationId: number;
  userId: number;
  types: string[];
  /** Events after this position are its own; undefined: its queue never registered. */
  startAfter: number | undefined;
  received: number[];
  /** The connection each receipt came on. */
  receivedOn: number[];
  reconnections: number;
}

export interface CheckInput {
  history: RecordedHistory;
  snapshot: Snapshot;
  emails: DeliveredEmail[];
  clients: LiveRecord[];
}

/** The kinds of change, and how many of each must have succeeded in any run (a 2-minute CI run makes several times more). */
export const MINIMUM_SUCCESSES: Record<string, number> = {
  invite: 20,
  'revoke invitation': 5,
  'accept invitation': 5,
  'add emoji': 10,
  'deactivate emoji': 5,
  upload: 15,
  'delete attachment': 5,
};

/**
 * How long after a fault's end a 503 or a missing answer is still its doing: a restarted process
 * warming up, pools reconnecting after a cut or terminated backends, a transaction that waited for a
 * connection through the fault (s).
 */
export const UNAVAILABILITY_GRACE_MS = 5_000;

/**
 * A copy accepted this long before its sender was killed or stopped may still have gone unmarked:
 * the receiver records a message before its answer reaches the sender.
 */
export const ACCEPTANCE_SLACK_MS = 1_000;
/**
 * How long after a copy's acceptance the worker marks it SENT at the latest when nothing goes wrong:
 * the rest of its batch (about a second of deliveries, worker.ts) and the statement.
 */
export const MARK_DUE_MS = 3_000;
/** How long after a database fault's end its connections may still fail a SENT mark (pools reconnecting). */
export const DATABASE_RECOVERY_MS = 2_000;

/** A moment as the soak prints it: seconds into the run. */
const inRun = (history: RecordedHistory) => (at: number) => `${((at - history.startedAt) / 1000).toFixed(1)} s`;
const subject = <T>(op: Operation) => op.subject as T;
const ofKind = (history: RecordedHistory, kind: string) => history.operations.filter((op) => op.kind === kind);

/** Every check, in the report's order. */
export function runChecks(input: CheckInput): CheckResult[] {
  const { history, snapshot } = input;
  return [
    checkInvitations(history, snapshot),
    checkRevocations(history, snapshot),
    checkAcceptances(history, snapshot),
    checkEmojiAdditions(history, snapshot),
    checkEmojiDeactivations(history, snapshot),
    checkUploads(history, snapshot),
    checkDeletions(history, snapshot),
    checkStorage(snapshot),
    checkEmailDelivery(snapshot, input.emails),
    checkRedeliveries(input.emails, history),
    checkAvailability(history),
    checkMinimumSuccesses(history),
    checkLiveClients(snapshot, input.clients),
  ];
}

function result(name: string, unit: string, examined: number, violations: string[], notes?: string): CheckResult {
  return { name, unit, examined, violations, ...(notes ? { notes } : {}) };
}

/** One change request against what the database shows: the promise it broke, if any. */
type Verdict = (op: Operation) => string | undefined;

function checkChanges(history: RecordedHistory, kind: string, name: string, verdict: Verdict): CheckResult {
  const ops = ofKind(history, kind);
  return result(
    name,
    'requests',
    ops.length,
    ops.map(verdict).filter((v): v is string => v !== undefined),
  );
}

const refused = (op: Operation) => `was refused (${op.status})`;

export function checkInvitations(history: RecordedHistory, snapshot: Snapshot): CheckResult {
  return checkChanges(history, 'invite', 'invitations', (op) => {
    const { organizationId, emails } = subject<{ organizationId: number; emails: string[] }>(op);
    const found = snapshot.invitations.filter((row) => row.organizationId === organizationId && emails.includes(row.email)).length;
    const what = `invitation #${op.id} of ${emails.join(', ')}`;
    const rows = `${found} of its ${emails.length} rows`;
    if (op.outcome === 'ok' && found !== emails.length) return `${what} was acknowledged; ${rows} are in the database`;
    if (op.outcome === 'refused' && found !== 0) return `${what} ${refused(op)}; ${rows} are in the database`;
    const partial = found !== 0 && found !== emails.length;
    if (op.outcome === 'unknown' && partial) return `${what} (unknown outcome) left ${rows}: not all or none`;
    return undefined;
  });
}

export function checkRevocations(history: RecordedHistory, snapshot: Snapshot): CheckResult {
  return checkChanges(history, 'revoke invitation', 'revocations', (op) => {
    const { invitationId } = subject<{ invitationId: number }>(op);
    const status = snapshot.invitations.find((row) => row.id === invitationId)?.status;
    const what = `the revocation of invitation ${invitationId} (#${op.id})`;
    if (op.outcome === 'ok' && status !== 'REVOKED') return `${what} was acknowledged; its status is ${status ?? 'gone'}`;
    if (op.outcome === 'refused' && status === 'REVOKED') return `${what} ${refused(op)}; it is revoked`;
    return undefined;
  });
}

export function checkAcceptances(history: RecordedHistory, snapshot: Snapshot): CheckResult {
  return checkChanges(history, 'accept invitation', 'acceptances', (op) => {
    const { organizationId, email } = subject<{ organizationId: number; email: string }>(op);
    const n = snapshot.accounts.filter((a) => a.organizationId === organizationId && a.email.toLowerCase() === email.toLowerCase()).length;
    if (op.outcome === 'ok' && n !== 1) return `the acceptance of ${email} (#${op.id}) was acknowledged; ${n} accounts exist`;
    if (op.outcome === 'refused' && n !== 0) return `the acceptance of ${email} (#${op.id}) ${refused(op)}; the account exists`;
    return undefined;
  });
}

const emojiRows = (snapshot: Snapshot, op: Operation) => {
  const { organizationId, name } = subject<{ organizationId: number; name: string }>(op);
  return { name, rows: snapshot.emoji.filter((e) => e.organizationId === organizationId && e.name === name) };
};

export function checkEmojiAdditions(history: RecordedHistory, snapshot: Snapshot): CheckResult {
  return checkChanges(history, 'add emoji', 'emoji additions', (op) => {
    const { name, rows } = emojiRows(snapshot, op);
    if (op.outcome === 'ok' && rows.length !== 1) return `emoji ${name} (#${op.id}) was acknowledged; ${rows.length} rows are there`;
    if (op.outcome === 'refused' && rows.length !== 0) return `emoji ${name} (#${op.id}) ${refused(op)}; it is in the database`;
    return undefined;
  });
}

export function checkEmojiDeactivations(history: RecordedHistory, snapshot: Snapshot): CheckResult {
  return checkChanges(history, 'deactivate emoji', 'emoji deactivations', (op) => {
    const { name, rows } = emojiRows(snapshot, op);
    const what = `the deactivation of emoji ${name} (#${op.id})`;
    const state = rows.length ? 'active' : 'not in the database';
    if (op.outcome === 'ok' && rows[0]?.deactivated !== true) return `${what} was acknowledged; it is ${state}`;
    if (op.outcome === 'refused' && rows.some((row) => row.deactivated)) return `${what} ${refused(op)}; it is deactivated`;
    return undefined;
  });
}

export function checkUploads(history: RecordedHistory, snapshot: Snapshot): CheckResult {
  const deletions = ofKind(history, 'delete attachment').filter((o) => o.outcome !== 'refused');
  const mayBeDeleted = new Set(deletions.map((o) => subject<{ name: string }>(o).name));
  return checkChanges(history, 'upload', 'uploads', (op) => {
    const { organizationId, name } = subject<{ organizationId: number; name: string }>(op);
    const rows = snapshot.attachments.filter((a) => a.organizationId === organizationId && a.name === name).length;
    const deleted = rows === 0 && mayBeDeleted.has(name);
    if (op.outcome === 'ok' && rows !== 1 && !deleted) return `upload ${name} (#${op.id}) was acknowledged; ${rows} rows are there`;
    if (op.outcome === 'refused' && rows !== 0) return `upload ${name} (#${op.id}) ${refused(op)}; its row is in the database`;
    return undefined;
  });
}

export function checkDeletions(history: RecordedHistory, snapshot: Snapshot): CheckResult {
  return checkChanges(history, 'delete attachment', 'deletions', (op) => {
    const { attachmentId } = subject<{ attachmentId: number }>(op);
    const present = snapshot.attachments.some((a) => a.id === attachmentId);
    const what = `the deletion of attachment ${attachmentId} (#${op.id})`;
    if (op.outcome === 'ok' && present) return `${what} was acknowledged; its row is in the database`;
    if (op.outcome === 'refused' && !present) return `${what} ${refused(op)}; its row is gone`;
    return undefined;
  });
}

/** Each organization's upload_space_used is its files' sizes; every row has its bytes; no bytes lack a row (after the sweep). */
export function checkStorage(snapshot: Snapshot): CheckResult {
  const violations: string[] = [];
  for (const { organizationId, used } of snapshot.uploadSpaceUsed) {
    const sum = snapshot.attachments.filter((a) => a.organizationId === organizationId).reduce((total, a) => total + a.size, 0);
    if (used !== sum) violations.push(`organization ${organizationId}: upload_space_used is ${used}, its files' sizes add up to ${sum}`);
  }
  for (const file of snapshot.attachments) {
    const size = snapshot.storedFiles.get(file.pathId);
    if (size === undefined) violations.push(`attachment ${file.pathId} (id ${file.id}): its row has no stored bytes`);
    else if (size !== file.size) violations.push(`attachment ${file.pathId}: ${size} bytes stored, ${file.size} in its row`);
  }
  const rowPaths = new Set(snapshot.attachments.map((a) => a.pathId));
  const ofSoak = (path: string) => snapshot.uploadSpaceUsed.some(({ organizationId }) => path.startsWith(`${organizationId}/`));
  const stored = [...snapshot.storedFiles.keys()].filter(ofSoak);
  for (const path of stored) if (!rowPaths.has(path)) violations.push(`stored bytes without a row: ${path}`);
  return result('file storage', 'rows and stored files', snapshot.attachments.length + stored.length, violations);
}

/**
 * Delivery is at least once (docs/guide/operations.md, "E-mail"): every invitation's e-mail arrived, every copy carries
 * its outbox row's Message-ID, no row sent more copies than it had attempts, none arrived for an
 * address without an invitation, and no row is left pending or failed.
 */
export function checkEmailDelivery(snapshot: Snapshot, emails: DeliveredEmail[]): CheckResult {
  const violations: string[] = [];
  const invited = new Set(snapshot.invitations.map((row) => row.email));
  const arrived = new Set(emails.map((copy) => copy.to));
  for (const email of invited) if (!arrived.has(email)) violations.push(`the invitation e-mail to ${email} never arrived`);
  for (const row of snapshot.outbox) {
    const copies = emails.filter((copy) => copy.to === row.toAddress);
    const foreign = copies.filter((copy) => copy.messageId !== row.messageId);
    const what = `the e-mail to ${row.toAddress}`;
    if (foreign.length > 0) {
      const ids = foreign.map((c) => c.messageId).join(', ');
      violations.push(`${foreign.length} of the ${copies.length} copies of ${what} carry another Message-ID than ${row.messageId}: ${ids}`);
    }
    if (copies.length > row.attempts) violations.push(`${what} arrived ${copies.length} times in ${row.attempts} attempts`);
    if (row.status !== 'SENT') violations.push(`${what} is ${row.status} after the drain (last error: ${row.lastError})`);
  }
  const addressed = new Set(snapshot.outbox.map((row) => row.toAddress));
  const strays = emails.filter((copy) => !invited.has(copy.to) || !addressed.has(copy.to));
  for (const to of new Set(strays.map((copy) => copy.to))) {
    violations.push(`${strays.filter((c) => c.to === to).length} e-mails arrived for ${to}, which has no invitation or no outbox row`);
  }
  return result('e-mail delivery', 'invited addresses and outbox rows', invited.size + snapshot.outbox.length, violations);
}

/** The moments during which a fault could have kept a copy accepted at `at` by `sender` from being marked SENT. */
function couldLoseMark(fault: FaultSpan, sender: string, at: number): boolean {
  if (fault.kind === 'smtp-refuses') return false;
  const window = { from: at - ACCEPTANCE_SLACK_MS, to: at + MARK_DUE_MS };
  if (fault.target !== null) {
    // The sender itself killed or stopped: between its signal and its exit.
    if (fault.target !== sender) return false;
    return fault.start <= window.to && (fault.exited ?? fault.start) >= window.from;
  }
  return fault.start <= window.to && fault.end + DATABASE_RECOVERY_MS >= window.from;
}

/**
 * A second copy of an e-mail is the outbox's at-least-once delivery, and needs a cause in the history:
 * a fault that struck the process that sent the copy before it (killed or stopped, or the database
 * cut or its backends terminated) between that copy's acceptance and its SENT mark. Each fault
 * excuses at most one extra copy of an e-mail.
 */
export function checkRedeliveries(emails: DeliveredEmail[], history: RecordedHistory): CheckResult {
  const { faults } = history;
  const seconds = inRun(history);
  const violations: string[] = [];
  const byAddress = new Map<string, DeliveredEmail[]>();
  for (const copy of emails) byAddress.set(copy.to, [...(byAddress.get(copy.to) ?? []), copy]);
  let redeliveries = 0;
  const excusedBy = new Map<string, number>();
  for (const [to, copies] of byAddress) {
    copies.sort((a, b) => a.at - b.at);
    const used = new Set<FaultSpan>();
    for (let i = 0; i < copies.length - 1; i++) {
      redeliveries++;
      const copy = copies[i]!;
      const cause = faults.find((fault) => !used.has(fault) && couldLoseMark(fault, copy.sentBy, copy.at));
      if (cause) {
        used.add(cause);
        excusedBy.set(cause.kind, (excusedBy.get(cause.kind) ?? 0) + 1);
        continue;
      }
      const when = copies.map((c) => `${c.sentBy} at ${seconds(c.at)}`).join(', ');
      const near = faults
        .filter((f) => Math.abs(f.start - copy.at) < 30_000)
        .map((f) => `${f.kind}${f.target ? ` of ${f.target}` : ''} ${seconds(f.start)}-${seconds(f.end)}`);
      const faultsNear = `faults within 30 s: ${near.join('; ') || 'none'}`;
      violations.push(`the e-mail to ${to} arrived ${copies.length} times (${when}); no fault left copy ${i + 1} unmarked (${faultsNear})`);
    }
  }
  const causes = [...excusedBy].map(([kind, n]) => `${kind} ${n}`).join(', ');
  const notes = `${redeliveries} re-deliveries${causes ? ` (excused by ${causes})` : ''}`;
  return result('re-deliveries', 'e-mails', byAddress.size, violations, notes);
}

/**
 * A 503 or a missing answer is a fault's doing only while one lasts, or within the grace after it:
 * a missing answer only during a fault of the request's server or of every process (the database);
 * a 503 during any fault but the mail server's, since a killed or stopped server's clients move to
 * the others with its load.
 */
export function checkAvailability(history: RecordedHistory): CheckResult {
  const seconds = inRun(history);
  const violations: string[] = [];
  const unavailable = history.operations.filter((op) => op.status === 503 || op.status === null);
  for (const op of unavailable) {
    const answeredAt = op.answeredAt ?? Number.POSITIVE_INFINITY;
    const excused = history.faults.some(
      (fault) =>
        fault.kind !== 'smtp-refuses' &&
        (op.status === 503 || fault.target === null || fault.target === op.server) &&
        fault.start <= answeredAt &&
        fault.end + UNAVAILABILITY_GRACE_MS >= op.sentAt,
    );
    if (!excused) {
      const answer = op.status === 503 ? '503' : 'no answer';
      const faults = op.status === 503 ? 'no fault' : 'no fault of that server or the database';
      const when = `between ${seconds(op.sentAt)} and ${seconds(answeredAt)}`;
      const grace = `${UNAVAILABILITY_GRACE_MS / 1000} s`;
      violations.push(`${op.kind} (#${op.id}) on ${op.server}: ${answer} ${when}, ${faults} within ${grace} (${op.detail?.slice(0, 200)})`);
    }
  }
  return result('availability', 'requests', history.operations.length, violations, `${unavailable.length} answered 503 or not at all`);
}

export function checkMinimumSuccesses(history: RecordedHistory): CheckResult {
  const violations: string[] = [];
  for (const [kind, minimum] of Object.entries(MINIMUM_SUCCESSES)) {
    const ok = ofKind(history, kind).filter((op) => op.outcome === 'ok').length;
    if (ok < minimum) violations.push(`only ${ok} ${kind} requests succeeded, fewer than ${minimum}`);
  }
  return result('successes', 'kinds of change', Object.keys(MINIMUM_SUCCESSES).length, violations);
}

/** The positions a live client should have received: its organization's events of its types, for its user, after its start. */
export function expectedPositions(events: Snapshot['events'], client: LiveRecord, startAfter: number): number[] {
  const forUser = (e: Snapshot['events'][number]) => e.recipientIds.length === 0 || e.recipientIds.includes(client.userId);
  return events
    .filter((e) => e.organizationId === client.organizationId && e.position > startAfter && forUser(e) && client.types.includes(e.type))
    .map((e) => e.position)
    .sort((a, b) => a - b);
}

/** Every live client received each of its events exactly once, in order, across its reconnections. */
export function checkLiveClients(snapshot: Snapshot, clients: LiveRecord[]): CheckResult {
  const violations: string[] = [];
  for (const client of clients) {
    if (client.startAfter === undefined) {
      violations.push(`${client.name}: its queue never registered, or is gone`);
      continue;
    }
    const expected = expectedPositions(snapshot.events, client, client.startAfter);
    const got = client.received;
    if (expected.length === got.length && expected.every((p, i) => got[i] === p)) continue;
    const duplicates = got.filter((p, i) => got.indexOf(p) !== i);
    const missing = expected.filter((p) => !got.includes(p));
    const foreign = got.filter((p) => !expected.includes(p));
    const disorder = got.findIndex((p, i) => i > 0 && p <= got[i - 1]!);
    const receipts = got.map((p, i) => `${p}@${client.receivedOn[i]}`);
    const first = (positions: number[]) => positions.slice(0, 10).join(',') + (positions.length > 10 ? ` (${positions.length})` : '');
    violations.push(
      `${client.name} (user ${client.userId}, ${client.types.join(',')}, after ${client.startAfter}, ` +
        `${client.reconnections} reconnections): ` +
        `${got.length} events received, ${expected.length} expected; missing ${first(missing)}; ` +
        `twice ${first(duplicates)}; not its own ${first(foreign)}; ${disorder >= 0 ? `out of order at ${disorder}` : 'in order'}; ` +
        `received (position@connection) ${receipts.slice(0, 30).join(' ')}; expected ${expected.slice(0, 30).join(' ')}`,
    );
  }
  const events = clients.reduce((sum, c) => sum + c.received.length, 0);
  const reconnections = clients.reduce((sum, c) => sum + c.reconnections, 0);
  return result('live clients', 'clients', clients.length, violations, `${events} events received, ${reconnections} reconnections`);
}
