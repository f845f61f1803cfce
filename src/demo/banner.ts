// What `npm start` prints once the server listens: where to go, and with which credentials.
import type { Credentials, DemoOutcome } from './create-demo.js';
import { DEMO_OTHER_ACCOUNTS } from './demo-organization.js';

export interface ServerFacts {
  baseUrl: string;
  /** Where invitation e-mail goes (SMTP server or outbox directory); undefined: no worker. */
  mailDestination?: string;
  /** Where the data lives, e.g. "embedded PostgreSQL in /srv/data/postgres". */
  database: string;
}

export function startupBanner({ baseUrl, mailDestination, database }: ServerFacts, demo: DemoOutcome): string {
  return [
    `Server listening on ${baseUrl}`,
    `  Sign in:   ${baseUrl}/accounts/login/?next=%2Fgraphql   (then GraphiQL runs as you)`,
    `  GraphiQL:  ${baseUrl}/graphql`,
    `  REST base: ${baseUrl}/api/v1`,
    `  Database:  ${database}`,
    ...(mailDestination ? [`  E-mail:    ${mailDestination}`] : []),
    '',
    ...(demo.created ? demoCreated(baseUrl, demo) : demoSkipped(baseUrl, demo)),
  ].join('\n');
}

const account = ({ email, apiKey, password }: Credentials) => `${email.padEnd(28)}API key: ${apiKey}   password: ${password}`;

function demoCreated(baseUrl: string, demo: Extract<DemoOutcome, { created: true }>): string[] {
  const { owner, member } = demo;
  return [
    `The database was empty: created the demo organization "${demo.name}" (string_id ${demo.stringId}).`,
    `  Owner:   ${account(owner)}`,
    `  Member:  ${account(member)}`,
    `  Others:  ${DEMO_OTHER_ACCOUNTS.map((a) => `${a.email} (${a.role})`).join(', ')}`,
    'These keys and passwords are shown only now (POST /api/v1/fetch_api_key gives a key again for the password).',
    'To give any account a new key or a password:',
    `  npm run cli -- reset-api-key --org ${demo.stringId} --email <address>`,
    `  npm run cli -- set-password --org ${demo.stringId} --email <address>   (reads the password from standard input)`,
    '',
    `Try it in a browser: sign in at ${baseUrl}/accounts/login/?next=%2Fgraphql as ${owner.email}`,
    '  with the password above; GraphiQL then runs { me { email role } } as you, nothing to paste.',
    'Try the REST API:',
    `  curl -u ${member.email}:${member.apiKey} ${baseUrl}/api/v1/attachments`,
  ];
}

function demoSkipped(baseUrl: string, demo: Extract<DemoOutcome, { created: false }>): string[] {
  const org = demo.example?.stringId ?? '<string_id>';
  const email = demo.example?.ownerEmail ?? '<email>';
  return [
    `The database already holds ${demo.organizations} organization(s): the demo organization was not created.`,
    `Sign in at ${baseUrl}/accounts/login/ (a forgotten password: ${baseUrl}/accounts/password/reset/).`,
    'To get credentials, give a user a password, or a new API key (the old one stops working):',
    '  npm run cli -- list-organizations',
    `  npm run cli -- set-password --org ${org} --email ${email}   (reads the password from standard input)`,
    `  npm run cli -- reset-api-key --org ${org} --email ${email}`,
  ];
}
