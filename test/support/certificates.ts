// Certificate authorities and server certificates made with openssl in a temporary folder, for tests
// that need TLS of their own (a proxy that speaks TLS, a CA that did not sign PostgreSQL's certificate).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const openssl = (args: string[], cwd: string) => promisify(execFile)('openssl', args, { cwd });

export interface Certificates {
  dir: string;
  /** The CA's certificate file (for sslrootcert). */
  caFile: string;
  /** A server certificate the CA signed, for `serverName`, and its key (PEM). */
  cert: string;
  key: string;
  remove(): Promise<void>;
}

/** A new CA named `caName` and a certificate it signed for `serverName` (its subject). */
export async function makeCertificates(caName: string, serverName = 'localhost'): Promise<Certificates> {
  const dir = await mkdtemp(join(tmpdir(), 'tc-certs-'));
  await openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${caName}`, '-keyout', 'ca.key', '-out', 'ca.crt'],
    dir,
  );
  await openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${serverName}`, '-keyout', 'server.key', '-out', 'server.csr'], dir);
  await openssl(
    ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-out', 'server.crt'],
    dir,
  );
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    cert: await readFile(join(dir, 'server.crt'), 'utf8'),
    key: await readFile(join(dir, 'server.key'), 'utf8'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
