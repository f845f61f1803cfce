// One line of standard input, for a password: typed at a terminal without echo, or piped in
// (`printf '%s\n' "$PASSWORD" | npm run cli -- set-password ...`). Never an argument: those land in
// shell history and in every user's `ps`.
import { spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The first line without its line ending; at end of input without one, what came. */
export async function readPasswordLine(): Promise<string> {
  const terminal = process.stdin.isTTY === true;
  if (terminal) {
    process.stderr.write('Password: ');
    spawnSync('stty', ['-echo'], { stdio: 'inherit' });
  }
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  try {
    const line = await new Promise<string>((resolve) => {
      lines.once('line', resolve);
      lines.once('close', () => resolve(''));
    });
    return line;
  } finally {
    lines.close();
    process.stdin.destroy();
    if (terminal) {
      spawnSync('stty', ['echo'], { stdio: 'inherit' });
      process.stderr.write('\n');
    }
  }
}
