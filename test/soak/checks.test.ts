// The fault soak's checker (scripts/soak/checks.ts) on made-up runs: a clean run passes every check,
// and each check fails on a run with exactly the violation it exists for.
import { describe, expect, test } from 'vitest';
import {
  MINIMUM_SUCCESSES,
  UNAVAILABILITY_GRACE_MS,
  runChecks,
  type CheckInput,
  type CheckResult,
  type DeliveredEmail,
} from '../../scripts/soak/checks.js';
import type { FaultSpan, Operation, Outcome } from '../../scripts/soak/history.js';

const ORG = 1;
const USER = 10;
const T0 = 1_000_000;
const KILL_OF_B: FaultSpan = {
  kind: 'sigkill',
  target: 'server B',
  start: T0 + 50_000,
  exited: T0 + 50_100,
  end: T0 + 52_000,
  detail: 'server B',
};

/** A run in which every change succeeded the minimum number of times and nothing broke. */
function cleanRun(): CheckInput {
  const operations: Operation[] = [];
  let at = T0;
  const record = (kind: string, subject: Record<string, unknown>, outcome: Outcome = 'ok', server = 'server A') => {
    const status = outcome === 'ok' ? 200 : outcome === 'refused' ? 400 : 503;
    const op: Operation = { id: operations.length, kind, server, subject, status, outcome, sentAt: (at += 100), answeredAt: at + 50 };
    operations.push(op);
    return op;
  };
  const run: CheckInput = {
    history: { startedAt: T0, operations, faults: [KILL_OF_B] },
    snapshot: {
      invitations: [],
      accounts: [],
      emoji: [],
      attachments: [],
      uploadSpaceUsed: [],
      storedFiles: new Map(),
      outbox: [],
      events: [],
    },
    emails: [],
    clients: [],
  };
  const { snapshot, emails } = run;
  for (let i = 1; i <= MINIMUM_SUCCESSES.invite!; i++) {
    const email = `invitee-${i}@soak.example`;
    record('invite', { organizationId: ORG, emails: [email] });
    snapshot.invitations.push({ id: i, organizationId: ORG, email, status: 'PENDING' });
    const messageId = `<outbox-${i}@soak.example>`;
    snapshot.outbox.push({ id: i, toAddress: email, status: 'SENT', attempts: 1, lastError: null, messageId });
    emails.push({ to: email, messageId, text: '', at: T0 + 1_000 * i, sentBy: 'server A' });
  }
  // The last e-mail's first copy was accepted just before server B was killed, so it went again.
  const last = snapshot.outbox.at(-1)!;
  last.attempts = 2;
  Object.assign(emails.at(-1)!, { sentBy: 'server B', at: KILL_OF_B.start - 100 });
  emails.push({ ...emails.at(-1)!, sentBy: 'server A', at: KILL_OF_B.start + 40_000 });
  for (let id = 1; id <= MINIMUM_SUCCESSES['revoke invitation']!; id++) {
    record('revoke invitation', { organizationId: ORG, invitationId: id });
    snapshot.invitations[id - 1]!.status = 'REVOKED';
  }
  for (let id = 6; id < 6 + MINIMUM_SUCCESSES['accept invitation']!; id++) {
    const { email } = snapshot.invitations[id - 1]!;
    record('accept invitation', { organizationId: ORG, email });
    snapshot.invitations[id - 1]!.status = 'ACCEPTED';
    snapshot.accounts.push({ organizationId: ORG, email });
  }
  for (let i = 0; i < MINIMUM_SUCCESSES['add emoji']!; i++) {
    record('add emoji', { organizationId: ORG, name: `soak_${i}` });
    snapshot.emoji.push({ organizationId: ORG, name: `soak_${i}`, deactivated: false });
  }
  for (let i = 0; i < MINIMUM_SUCCESSES['deactivate emoji']!; i++) {
    record('deactivate emoji', { organizationId: ORG, name: `soak_${i}` });
    snapshot.emoji[i]!.deactivated = true;
  }
  for (let i = 0; i < MINIMUM_SUCCESSES.upload!; i++) {
    record('upload', { organizationId: ORG, name: `file-${i}.bin`, ownerId: USER });
    snapshot.attachments.push({ id: 100 + i, organizationId: ORG, name: `file-${i}.bin`, pathId: `${ORG}/f${i}`, size: 10 });
    snapshot.storedFiles.set(`${ORG}/f${i}`, 10);
  }
  for (let i = 0; i < MINIMUM_SUCCESSES['delete attachment']!; i++) {
    record('delete attachment', { organizationId: ORG, attachmentId: 100 + i, name: `file-${i}.bin` });
    snapshot.attachments.shift();
    snapshot.storedFiles.delete(`${ORG}/f${i}`);
  }
  snapshot.uploadSpaceUsed.push({ organizationId: ORG, used: 10 * snapshot.attachments.length });
  // A request to server B while it was down, and a refused change (absent, as it must be).
  at = KILL_OF_B.start + 500;
  record('upload', { organizationId: ORG, name: 'file-lost.bin', ownerId: USER }, 'unknown', 'server B').status = null;
  record('add emoji', { organizationId: ORG, name: 'soak_refused' }, 'refused');
  for (const position of [1, 2, 3]) snapshot.events.push({ position, organizationId: ORG, recipientIds: [], type: 'realm_emoji' });
  snapshot.events.push({ position: 4, organizationId: ORG, recipientIds: [USER + 1], type: 'realm_emoji' });
  run.clients.push({
    name: 'subscription 0',
    organizationId: ORG,
    userId: USER,
    types: ['realm_emoji'],
    startAfter: 0,
    received: [1, 2, 3],
    receivedOn: [0, 0, 1],
    reconnections: 1,
  });
  return run;
}

/** The row of the first file the clean run deleted, as it was. */
const deletedFile = () => ({ id: 100, organizationId: ORG, name: 'file-0.bin', pathId: `${ORG}/f0`, size: 10 });
const checked = (run: CheckInput, name: string): CheckResult => runChecks(run).find((result) => result.name === name)!;
const violationsOf = (run: CheckInput, name: string) => checked(run, name).violations;
const op = (run: CheckInput, kind: string, index = 0): Operation => run.history.operations.filter((o) => o.kind === kind)[index]!;
const copiesTo = (run: CheckInput, to: string): DeliveredEmail[] => run.emails.filter((copy) => copy.to === to);

describe('the soak checker', () => {
  test('a clean run passes every check, and each check says how much it examined', () => {
    const results = runChecks(cleanRun());
    expect(results.flatMap((r) => r.violations)).toEqual([]);
    for (const result of results) expect(result.examined, result.name).toBeGreaterThan(0);
    expect(results.find((r) => r.name === 're-deliveries')!.notes).toBe('1 re-deliveries (excused by sigkill 1)');
  });

  describe('e-mail', () => {
    test('a lost e-mail', () => {
      const run = cleanRun();
      run.emails = run.emails.filter((copy) => copy.to !== 'invitee-3@soak.example');
      expect(violationsOf(run, 'e-mail delivery')).toEqual(['the invitation e-mail to invitee-3@soak.example never arrived']);
    });

    test('four copies where one fault explains one extra copy', () => {
      const run = cleanRun();
      // Three copies from server B around its kill (each within the kill's reach), the fourth from server A.
      const first = copiesTo(run, 'invitee-20@soak.example')[0]!;
      run.emails.push({ ...first, at: first.at + 200 }, { ...first, at: first.at + 400 });
      run.snapshot.outbox.at(-1)!.attempts = 4;
      const violations = violationsOf(run, 're-deliveries');
      expect(violations).toHaveLength(2);
      expect(violations[0]).toMatch(/^the e-mail to invitee-20@soak.example arrived 4 times .* no fault left copy 2 unmarked/);
      expect(checked(run, 're-deliveries').notes).toBe('3 re-deliveries (excused by sigkill 1)');
    });

    test('a second copy with no fault of its sender near its acceptance', () => {
      const run = cleanRun();
      const copy = copiesTo(run, 'invitee-4@soak.example')[0]!;
      run.emails.push({ ...copy, at: copy.at + 40_000 });
      run.snapshot.outbox[3]!.attempts = 2;
      expect(violationsOf(run, 're-deliveries')).toHaveLength(1);
      // The kill of server B does not explain a copy server A sent, nor one accepted long before it.
      const excused = cleanRun();
      copiesTo(excused, 'invitee-20@soak.example')[0]!.sentBy = 'server A';
      expect(violationsOf(excused, 're-deliveries')).toHaveLength(1);
      const early = cleanRun();
      copiesTo(early, 'invitee-20@soak.example')[0]!.at = KILL_OF_B.start - 10_000;
      expect(violationsOf(early, 're-deliveries')).toHaveLength(1);
    });

    test('a copy with another Message-ID, and more copies than attempts', () => {
      const run = cleanRun();
      copiesTo(run, 'invitee-20@soak.example')[1]!.messageId = '<other@soak.example>';
      run.snapshot.outbox.at(-1)!.attempts = 1;
      const violations = violationsOf(run, 'e-mail delivery');
      expect(violations).toHaveLength(2);
      expect(violations[0]).toMatch(/carry another Message-ID than <outbox-20@soak.example>: <other@soak.example>/);
      expect(violations[1]).toBe('the e-mail to invitee-20@soak.example arrived 2 times in 1 attempts');
    });

    test('an e-mail left pending, and one to an address without an invitation', () => {
      const run = cleanRun();
      run.snapshot.outbox[0]!.status = 'PENDING';
      run.emails.push({ to: 'stranger@soak.example', messageId: '<outbox-99@soak.example>', text: '', at: T0, sentBy: 'server A' });
      expect(violationsOf(run, 'e-mail delivery')).toEqual([
        'the e-mail to invitee-1@soak.example is PENDING after the drain (last error: null)',
        '1 e-mails arrived for stranger@soak.example, which has no invitation or no outbox row',
      ]);
    });
  });

  describe('an acknowledged change that is missing', () => {
    test.each([
      ['invitations', (run: CheckInput) => run.snapshot.invitations.splice(2, 1)],
      ['revocations', (run: CheckInput) => (run.snapshot.invitations[0]!.status = 'PENDING')],
      ['acceptances', (run: CheckInput) => run.snapshot.accounts.pop()],
      ['emoji additions', (run: CheckInput) => run.snapshot.emoji.pop()],
      ['emoji deactivations', (run: CheckInput) => (run.snapshot.emoji[0]!.deactivated = false)],
      ['uploads', (run: CheckInput) => run.snapshot.attachments.pop()],
      ['deletions', (run: CheckInput) => run.snapshot.attachments.push(deletedFile())],
    ])('%s', (name, breakIt) => {
      const run = cleanRun();
      breakIt(run);
      expect(violationsOf(run, name)).toHaveLength(1);
      expect(violationsOf(run, name)[0]).toMatch(/acknowledged/);
    });
  });

  describe('a refused change that is in the database (a refused deletion: the row gone)', () => {
    test.each([
      ['invitations', 'invite'],
      ['revocations', 'revoke invitation'],
      ['acceptances', 'accept invitation'],
      ['emoji additions', 'add emoji'],
      ['emoji deactivations', 'deactivate emoji'],
      ['uploads', 'upload'],
      ['deletions', 'delete attachment'],
    ])('%s', (name, kind) => {
      const run = cleanRun();
      const present = run.history.operations.filter((o) => o.kind === kind && o.outcome === 'ok').at(-1)!;
      Object.assign(present, { outcome: 'refused', status: 400 });
      expect(violationsOf(run, name)).toEqual([expect.stringMatching(/was refused \(400\)/)]);
    });
  });

  describe('availability', () => {
    test('a 503 with no fault near it', () => {
      const run = cleanRun();
      Object.assign(op(run, 'upload', 3), { status: 503, outcome: 'unknown' });
      const violations = violationsOf(run, 'availability');
      expect(violations).toEqual([expect.stringMatching(/^upload \(#\d+\) on server A: 503 between .* no fault within 5 s/)]);
    });

    test("a 503 of server A during server B's kill (its clients came to A), not after the grace, nor during the mail's refusal", () => {
      const run = cleanRun();
      const busy = run.history.operations.find((o) => o.status === null)!;
      Object.assign(busy, { server: 'server A', status: 503 });
      expect(violationsOf(run, 'availability')).toEqual([]);
      busy.sentAt = KILL_OF_B.end + UNAVAILABILITY_GRACE_MS + 1;
      busy.answeredAt = busy.sentAt + 10;
      expect(violationsOf(run, 'availability')).toHaveLength(1);
      const refusal: FaultSpan = { kind: 'smtp-refuses', target: null, start: busy.sentAt - 1_000, end: busy.sentAt + 1_000, detail: '' };
      run.history = { ...run.history, faults: [refusal] };
      expect(violationsOf(run, 'availability')).toHaveLength(1);
    });

    test("a missing answer on another server than the fault's, or after its grace", () => {
      const run = cleanRun();
      const lost = run.history.operations.find((o) => o.status === null)!;
      lost.server = 'server A';
      expect(violationsOf(run, 'availability')).toHaveLength(1);
      lost.server = 'server B';
      expect(violationsOf(run, 'availability')).toEqual([]);
      lost.sentAt = KILL_OF_B.end + UNAVAILABILITY_GRACE_MS + 1;
      lost.answeredAt = lost.sentAt + 30_000;
      expect(violationsOf(run, 'availability')).toHaveLength(1);
    });

    test('a run in which nothing succeeded (servers answering 503 to everything)', () => {
      const run = cleanRun();
      for (const operation of run.history.operations) Object.assign(operation, { status: 503, outcome: 'unknown' });
      expect(violationsOf(run, 'successes')).toHaveLength(Object.keys(MINIMUM_SUCCESSES).length);
      expect(violationsOf(run, 'availability').length).toBeGreaterThan(50);
    });

    test('one kind of change short of its minimum', () => {
      const run = cleanRun();
      Object.assign(op(run, 'deactivate emoji'), { status: 400, outcome: 'refused' });
      run.snapshot.emoji[0]!.deactivated = false;
      const minimum = MINIMUM_SUCCESSES['deactivate emoji']!;
      expect(violationsOf(run, 'successes')).toEqual([`only ${minimum - 1} deactivate emoji requests succeeded, fewer than ${minimum}`]);
    });
  });

  describe('live clients', () => {
    test('a subscriber that missed an event', () => {
      const run = cleanRun();
      run.clients[0]!.received = [1, 3];
      const missed = /subscription 0 .* 2 events received, 3 expected; missing 2;/;
      expect(violationsOf(run, 'live clients')).toEqual([expect.stringMatching(missed)]);
    });

    test('a subscriber that received an event twice', () => {
      const run = cleanRun();
      run.clients[0]!.received = [1, 2, 2, 3];
      expect(violationsOf(run, 'live clients')).toEqual([expect.stringMatching(/4 events received, 3 expected; missing ; twice 2;/)]);
    });

    test("a subscriber that received another user's event, or out of order", () => {
      const run = cleanRun();
      run.clients[0]!.received = [1, 2, 3, 4];
      expect(violationsOf(run, 'live clients')).toEqual([expect.stringMatching(/not its own 4;/)]);
      run.clients[0]!.received = [1, 3, 2];
      expect(violationsOf(run, 'live clients')).toEqual([expect.stringMatching(/out of order at 2/)]);
    });
  });

  test('stored bytes without a row, and a row without its bytes', () => {
    const run = cleanRun();
    run.snapshot.storedFiles.set(`${ORG}/stray`, 5);
    run.snapshot.storedFiles.delete(`${ORG}/f9`);
    expect(violationsOf(run, 'file storage')).toEqual([
      `attachment ${ORG}/f9 (id 109): its row has no stored bytes`,
      `stored bytes without a row: ${ORG}/stray`,
    ]);
  });
});
