// The soak's mixed workload: in each organization, workers that invite, revoke, accept invitations
// (from the e-mails that arrived), add and deactivate custom emoji, upload and delete files, and read
// lists and pages, each request on either server, every one recorded in the history.
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import sharp from 'sharp';
import type { Random } from './random.js';
import type { History, Operation } from './history.js';
import type { FleetMail, ServerSlot } from './fleet.js';

export interface SoakUser {
  id: number;
  email: string;
  authorization: string;
  administrator: boolean;
}

export interface SoakOrganization {
  id: number;
  name: string;
  users: SoakUser[];
}

/** What the workload did that later requests build on (ids it can revoke, delete, accept). */
interface Known {
  invitationIds: Set<number>;
  revoked: Set<number>;
  emoji: string[];
  deactivated: Set<string>;
  attachmentIds: Map<number, { ownerId: number; name: string }>;
  deleted: Set<number>;
  accepted: Set<string>;
}

const ATTACHMENTS_PAGE = `query Page($after: String) { me { attachmentPage(first: 5, after: $after) { edges { cursor node { id name size } } pageInfo { hasNextPage endCursor } } } }`;

let emojiImage: Buffer | undefined;

export interface Workload {
  run(until: () => boolean): Promise<void>;
  /** `count` changes sent at once to one server (for a SIGTERM in the middle of them). */
  burst(target: ServerSlot, count: number): Promise<unknown>;
}

export function workload(
  org: SoakOrganization,
  servers: ServerSlot[],
  history: History,
  mail: FleetMail,
  random: Random,
  runId: string,
): Workload {
  const known: Known = {
    invitationIds: new Set(),
    revoked: new Set(),
    emoji: [],
    deactivated: new Set(),
    attachmentIds: new Map(),
    deleted: new Set(),
    accepted: new Set(),
  };
  const administrators = org.users.filter((u) => u.administrator);
  const someone = () => random.pick(org.users);
  const anAdministrator = () => random.pick(administrators);
  /** Any server that runs; a request to one that is down still goes out (an unknown outcome). */
  const server = () => random.pick(servers.filter((s) => s.up()).length ? servers.filter((s) => s.up()) : servers);
  let serial = 0;
  const unique = () => `${runId}-${org.id}-${serial++}`;

  const form = (user: SoakUser, fields: Record<string, string>) => ({
    headers: { authorization: user.authorization, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });

  const operations: [number, (at: () => ServerSlot) => Promise<unknown>][] = [
    [
      4,
      async (at) => {
        const emails = Array.from({ length: random.int(1, 3) }, () => `invitee-${unique()}@soak.example`);
        const inviter = anAdministrator();
        await history.send('invite', at(), '/api/v1/invites', {
          method: 'POST',
          change: true,
          subject: { organizationId: org.id, emails },
          ...form(inviter, { invitee_emails: emails.join(','), stream_ids: '[]', invite_as: '400' }),
        });
      },
    ],
    [
      2,
      async (at) => {
        const op = await history.send('list invitations', at(), '/api/v1/invites', {
          change: false,
          headers: { authorization: anAdministrator().authorization },
        });
        for (const invite of (op.body as { invites?: { id: number }[] })?.invites ?? []) known.invitationIds.add(invite.id);
      },
    ],
    [
      1,
      async (at) => {
        const candidates = [...known.invitationIds].filter((id) => !known.revoked.has(id));
        if (candidates.length === 0) return;
        const id = random.pick(candidates);
        known.revoked.add(id);
        await history.send('revoke invitation', at(), `/api/v1/invites/${id}`, {
          method: 'DELETE',
          change: true,
          subject: { organizationId: org.id, invitationId: id },
          headers: { authorization: anAdministrator().authorization },
        });
      },
    ],
    [
      2,
      async (at) => {
        // Its addresses name the run and the organization (invitee-<run>-<organization>-<serial>@...).
        const mine = mail.delivered().filter((m) => m.to.includes(`-${runId}-${org.id}-`) && !known.accepted.has(m.to));
        if (mine.length === 0) return;
        const message = random.pick(mine);
        const key = /\/accounts\/do_confirm\/([A-Za-z0-9_-]+)/.exec(message.text)?.[1];
        if (!key) return history.violation(`an invitation e-mail without an acceptance link: ${message.text.slice(0, 200)}`);
        known.accepted.add(message.to);
        // As a browser posts the form: from the server's own origin, its CSRF cookie's token in the form.
        const server = at();
        const csrfToken = cryptoRandomBytes(32).toString('base64url');
        const op = await history.send('accept invitation', server, `/accounts/do_confirm/${key}`, {
          method: 'POST',
          change: true,
          subject: { organizationId: org.id, email: message.to },
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            origin: new URL(server.url).origin,
            cookie: `csrftoken=${csrfToken}`,
          },
          body: new URLSearchParams({
            csrfmiddlewaretoken: csrfToken,
            full_name: 'Soak Newcomer',
            password: `Soak-lighthouse-${unique()}`,
          }).toString(),
        });
        // A 200 is the welcome page; the form again (a 200 as well) would be an acceptance that did not happen.
        if (op.outcome === 'ok' && !String(op.body).includes('id="api-key"'))
          history.violation(
            `the acceptance of ${message.to} (#${op.id}) answered 200 without an account: ${String(op.body).slice(0, 300)}`,
          );
      },
    ],
    [
      2,
      async (at) => {
        const name = `soak_${unique().replaceAll('-', '_')}`;
        known.emoji.push(name);
        const body = new FormData();
        body.append('file', new Blob([new Uint8Array(await image())], { type: 'image/png' }), `${name}.png`);
        await history.send('add emoji', at(), `/api/v1/realm/emoji/${name}`, {
          method: 'POST',
          change: true,
          subject: { organizationId: org.id, name },
          headers: { authorization: someone().authorization },
          body,
        });
      },
    ],
    [
      1,
      async (at) => {
        const candidates = known.emoji.filter((name) => !known.deactivated.has(name));
        if (candidates.length === 0) return;
        const name = random.pick(candidates);
        known.deactivated.add(name);
        await history.send('deactivate emoji', at(), `/api/v1/realm/emoji/${name}`, {
          method: 'DELETE',
          change: true,
          subject: { organizationId: org.id, name },
          headers: { authorization: anAdministrator().authorization },
        });
      },
    ],
    [
      3,
      async (at) => {
        const owner = someone();
        const name = `file-${unique()}.bin`;
        const body = new FormData();
        body.append('file', new Blob([randomBytes(random, random.int(1, 20_000))], { type: 'application/octet-stream' }), name);
        await history.send('upload', at(), '/api/v1/user_uploads', {
          method: 'POST',
          change: true,
          subject: { organizationId: org.id, name, ownerId: owner.id },
          headers: { authorization: owner.authorization },
          body,
        });
      },
    ],
    [
      2,
      async (at) => {
        const user = someone();
        const op = await history.send('list attachments', at(), '/api/v1/attachments', {
          change: false,
          headers: { authorization: user.authorization },
        });
        for (const a of (op.body as { attachments?: { id: number; name: string }[] })?.attachments ?? [])
          if (a.name.startsWith('file-')) known.attachmentIds.set(a.id, { ownerId: user.id, name: a.name });
      },
    ],
    [
      1,
      async (at) => {
        const candidates = [...known.attachmentIds].filter(([id]) => !known.deleted.has(id));
        if (candidates.length === 0) return;
        const [id, { ownerId, name }] = random.pick(candidates);
        known.deleted.add(id);
        const owner = org.users.find((u) => u.id === ownerId)!;
        await history.send('delete attachment', at(), `/api/v1/attachments/${id}`, {
          method: 'DELETE',
          change: true,
          subject: { organizationId: org.id, attachmentId: id, name },
          headers: { authorization: owner.authorization },
        });
      },
    ],
    [
      1,
      async (at) => {
        // Pages of the caller's files, one after another, as a client walks them.
        const user = someone();
        let after: string | null = null;
        for (let page = 0; page < 3; page++) {
          const op: Operation = await history.send('attachments page (GraphQL)', at(), '/graphql', {
            method: 'POST',
            change: false,
            headers: { authorization: user.authorization, 'content-type': 'application/json' },
            body: JSON.stringify({ query: ATTACHMENTS_PAGE, variables: { after } }),
          });
          const result = op.body as
            | {
                data?: { me?: { attachmentPage?: { pageInfo: { hasNextPage: boolean; endCursor: string | null } } } };
                errors?: { message: string; extensions?: { code?: string } }[];
              }
            | undefined;
          if (op.outcome !== 'ok') return;
          const unavailable = result?.errors?.every((e) => e.extensions?.code === 'SERVICE_UNAVAILABLE');
          if (result?.errors && !unavailable) history.violation(`attachments page: ${JSON.stringify(result.errors).slice(0, 300)}`);
          const info = result?.data?.me?.attachmentPage?.pageInfo;
          if (!info?.hasNextPage) return;
          after = info.endCursor;
        }
      },
    ],
  ];
  const total = operations.reduce((sum, [weight]) => sum + weight, 0);
  const pickOperation = () => {
    let at = random.next() * total;
    for (const [weight, run] of operations) if ((at -= weight) < 0) return run;
    return operations[0]![1];
  };
  return {
    async run(until) {
      while (!until()) {
        await pickOperation()(server);
        await new Promise((resolve) => setTimeout(resolve, random.int(20, 150)));
      }
    },
    burst: (target, count) => Promise.all(Array.from({ length: count }, (_, i) => operations[[0, 4, 6][i % 3]!]![1](() => target))),
  };
}

async function image(): Promise<Buffer> {
  emojiImage ??= await sharp({ create: { width: 32, height: 32, channels: 4, background: { r: 200, g: 80, b: 160, alpha: 1 } } })
    .png()
    .toBuffer();
  return emojiImage;
}

function randomBytes(random: Random, size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (random.next() * 256) | 0;
  return bytes;
}
