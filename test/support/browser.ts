// Headless Chromium for browser tests, driven by playwright-core. The browser comes from the npm
// package @sparticuz/chromium (nothing to install beyond `npm install`); CHROMIUM_PATH overrides it.
import chromiumBinary from '@sparticuz/chromium';
import { chromium, type Browser } from 'playwright-core';

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
