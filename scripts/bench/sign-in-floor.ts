// The floor of signing in: node:http and the same Argon2id library verifying the same stored hash,
// nothing else (no database, no rate limits, no gate). PORT, PASSWORD_HASH and ANSWER (the body
// the server answers, so both do the same for the client) from the environment.
import { createServer } from 'node:http';
import { verify } from '@node-rs/argon2';

const hash = process.env.PASSWORD_HASH!;
const answer = process.env.ANSWER!;
const refusal = '{"result":"error","msg":"Your username or password is incorrect","code":"AUTHENTICATION_FAILED"}\n';

const server = createServer((request, response) => {
  if (request.url === '/health') {
    response.end('{"status":"ok"}');
    return;
  }
  let body = '';
  request.setEncoding('utf8');
  request.on('data', (chunk) => (body += chunk));
  request.on('end', async () => {
    const password = new URLSearchParams(body).get('password') ?? '';
    const valid = await verify(hash, password);
    response.writeHead(valid ? 200 : 401, { 'Content-Type': 'application/json' });
    response.end(valid ? answer : refusal);
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
