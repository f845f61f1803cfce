// Builds an earlier commit of this repository as the benchmark's baseline, the server as it was:
//   npx tsx scripts/bench/baseline.ts <commit> [dir]        (dir: /tmp/teamchat-baseline)
//   npm run bench -- --baseline <dir>
// The commit's files (git archive) in dir, its own npm packages installed and built (npm ci, whose
// postinstall builds dist/), and dir/BASELINE naming the commit for the bench's report.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [commit, dir = '/tmp/teamchat-baseline'] = process.argv.slice(2);
if (!commit) {
  console.error('usage: npx tsx scripts/bench/baseline.ts <commit> [dir]');
  process.exit(2);
}

const described = execFileSync('git', ['log', '-1', '--format=%h %s', commit], { encoding: 'utf8' }).trim();
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
execFileSync('sh', ['-c', 'git archive "$1" | tar -x -C "$2"', 'archive', commit, dir], { stdio: 'inherit' });
execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
writeFileSync(join(dir, 'BASELINE'), `${described}\n`);
console.log(`Built ${described} in ${dir}: npm run bench -- --baseline ${dir}`);
