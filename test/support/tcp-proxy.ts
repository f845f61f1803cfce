// A TCP proxy between the server and PostgreSQL that a test can break in the ways a database is lost,
// without touching the shared PostgreSQL: `cut` (connections reset, new ones refused), `refuse` (every
// connection dropped, new ones answered at start-up with PostgreSQL's own FATAL message for a SQLSTATE:
// a rotated password 28P01, a role pg_hba refuses 28000, too many connections 53300, a database
// starting up 57P03), `refuseTls` (no TLS any more: a client that requires it cannot connect). With
// `tls`, the proxy speaks TLS to clients that ask (sslmode=require) and plain text to PostgreSQL.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

export interface DatabaseProxy {
  /** The database URL through the proxy. */
  url: string;
  cut(): Promise<void>;
  /** Drops every connection; new ones are refused as PostgreSQL refuses them with `sqlstate`. */
  refuse(sqlstate: string, message: string): void;
  /** Drops every connection; new ones that ask for TLS are told the server does not support it. */
  refuseTls(): void;
  /** Forwards again (listening again after a cut). */
  restore(): Promise<void>;
  close(): Promise<void>;
}

type Fault = { sqlstate: string; message: string } | 'no tls' | null;

/** PostgreSQL's SSLRequest: length 8, code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 4, 210, 22, 47]);

/** A FATAL ErrorResponse, as PostgreSQL sends it before closing a connection it refuses. */
function fatal(sqlstate: string, message: string): Buffer {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', sqlstate],
      ['M', message],
    ].map(([type, value]) => Buffer.from(`${type}${value}\0`)),
    Buffer.from([0]),
  ]);
  const length = Buffer.alloc(4);
  length.writeInt32BE(fields.length + 4);
  return Buffer.concat([Buffer.from('E'), length, fields]);
}

/** The client's first packet (SSLRequest or StartupMessage: a length, then the rest). */
function firstPacket(socket: Socket): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 4 || buffered.length < buffered.readInt32BE(0)) return;
      socket.off('data', onData);
      socket.pause();
      resolve(buffered);
    };
    socket.on('data', onData);
    socket.resume();
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('closed')));
  });
}

export async function startDatabaseProxy(
  databaseUrl: string,
  options: { tls?: { key: string; cert: string } } = {},
): Promise<DatabaseProxy> {
  const target = new URL(databaseUrl);
  const socketDir = target.searchParams.get('host');
  const port = Number(target.port || 5432);
  const upstream = () => (socketDir ? connect(`${socketDir}/.s.PGSQL.${port}`) : connect(port, target.hostname));
  const open = new Set<Socket>();
  let fault: Fault = null;
  const track = (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => {});
    return socket;
  };

  async function serve(client: Socket): Promise<void> {
    let packet = await firstPacket(client);
    if (packet.equals(SSL_REQUEST)) {
      if (!options.tls || fault === 'no tls') {
        client.write('N');
        if (fault === 'no tls') return void client.end();
        packet = await firstPacket(client);
      } else {
        client.write('S');
        client = track(new TLSSocket(client, { isServer: true, ...options.tls }));
        packet = await firstPacket(client);
      }
    }
    if (fault && fault !== 'no tls') return void client.end(fatal(fault.sqlstate, fault.message));
    const database = track(upstream());
    // One side gone (a reset included, which pipe() does not pass on) takes the other with it, as a
    // direct connection would: PostgreSQL then ends the backend and its locks.
    for (const [side, other] of [
      [client, database],
      [database, client],
    ] as const)
      side.on('close', () => other.destroy());
    database.write(packet);
    client.pipe(database).pipe(client);
    client.resume();
  }

  const server = createServer((client) => void serve(track(client)).catch(() => client.destroy()));
  const listen = (onPort: number) => new Promise<void>((resolve) => server.listen(onPort, '127.0.0.1', () => resolve()));
  await listen(0);
  const proxyPort = (server.address() as AddressInfo).port;
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(proxyPort);
  url.searchParams.delete('host');
  const dropAll = () => {
    for (const socket of open) socket.destroy();
  };
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      dropAll();
    });
  return {
    url: url.href,
    cut: stop,
    refuse(sqlstate, message) {
      fault = { sqlstate, message };
      dropAll();
    },
    refuseTls() {
      fault = 'no tls';
      dropAll();
    },
    async restore() {
      fault = null;
      if (!server.listening) await listen(proxyPort);
    },
    close: stop,
  };
}
