// A TCP proxy between the server and PostgreSQL that a test can cut and restore: a real outage as
// the server sees it (connections reset, new ones refused), without stopping the shared PostgreSQL.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export interface DatabaseProxy {
  /** The database URL through the proxy. */
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startDatabaseProxy(databaseUrl: string): Promise<DatabaseProxy> {
  const target = new URL(databaseUrl);
  const socketDir = target.searchParams.get('host');
  const port = Number(target.port || 5432);
  const upstream = () => (socketDir ? connect(`${socketDir}/.s.PGSQL.${port}`) : connect(port, target.hostname));
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const database = upstream();
    const pair = [client, database];
    for (const socket of pair) {
      open.add(socket);
      // One side gone (a reset included, which pipe() does not pass on) takes the other with it, as a
      // direct connection would: PostgreSQL then ends the backend and its locks.
      socket.on('close', () => {
        open.delete(socket);
        for (const other of pair) other.destroy();
      });
      socket.on('error', () => {});
    }
    client.pipe(database).pipe(client);
  });
  const listen = (onPort: number) => new Promise<void>((resolve) => server.listen(onPort, '127.0.0.1', () => resolve()));
  await listen(0);
  const proxyPort = (server.address() as AddressInfo).port;
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(proxyPort);
  url.searchParams.delete('host');
  const stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of open) socket.destroy();
    });
  return { url: url.href, cut: stop, restore: () => listen(proxyPort), close: stop };
}
