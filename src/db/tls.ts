// sslmode in a connection string means what it means to libpq (and to every managed PostgreSQL's
// documentation): `require` encrypts without verifying the server, `verify-ca` checks the certificate
// against sslrootcert, `verify-full` also checks the host name. node-postgres 8 reads `require` and
// `verify-ca` as `verify-full` unless asked for libpq's meanings (uselibpqcompat=true), which we ask.

/** The sslmode values node-postgres can honour as libpq does (it cannot fall back to plain text: no `allow`, `prefer`). */
export const SUPPORTED_SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;

/** The connection string with libpq's sslmode meanings; `sslrootcert=system` (libpq 16): Node's own trusted CAs. */
export function withLibpqSslModes(connectionString: string): string {
  const url = new URL(connectionString);
  const params = url.searchParams;
  if (!params.has('sslmode') || params.has('uselibpqcompat')) return connectionString;
  params.set('uselibpqcompat', 'true');
  if (params.get('sslrootcert') === 'system') params.delete('sslrootcert');
  return url.href;
}
