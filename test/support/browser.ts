// Headless Chromium for browser tests, driven by playwright-core. The browser comes from the npm
// package @sparticuz/chromium (nothing to install beyond `npm install`); CHROMIUM_PATH overrides it.
import chromiumBinary from '@sparticuz/chromium';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startTestServer, type TestServer } from './server.js';
import { createWorld, type World } from './world.js';

async function executablePath(): Promise<string> {
  return process.env.CHROMIUM_PATH || (await chromiumBinary.executablePath());
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: await executablePath(),
    args: [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-zygote',
    ],
  });
}

/**
 * For a whole test file: a server of its own, an organization in it, and a headless browser; filled
 * in before the file's first test, closed after its last.
 */
export function browserWithWorld(): { server: TestServer; world: World; browser: Browser } {
  const context = {} as { server: TestServer; world: World; browser: Browser };
  beforeAll(async () => {
    context.server = await startTestServer();
    context.world = await createWorld(context.server.app.prisma);
    context.browser = await launchBrowser();
  });
  afterAll(async () => {
    await context.browser?.close();
    await context.server?.close();
  });
  return context;
}
