// The bundled GraphiQL page is 9 MB of HTML built from a 9 MB JavaScript string: importing its
// renderer would keep about 45 MiB resident in every server process for a page few people open.
// Instead a short-lived worker thread renders it once into files (plain and gzip) under the system's
// data directory (DATA_DIR/cache), and each request streams the file: the renderer's memory dies with the worker.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';

const RENDERER = '@graphql-yoga/render-graphiql';

/**
 * The page acts with the browser's session: another site's page must not frame it and steer a click
 * onto its Run button (GraphiQL fills its editor from `?query=`, and runs nothing until clicked).
 */
const NEVER_FRAMED = { 'Content-Security-Policy': "frame-ancestors 'none'", 'X-Frame-Options': 'DENY' };

/** Yoga's own test for a browser asking for the page (graphql-yoga's shouldRenderGraphiQL). */
export const wantsGraphiQL = (request: Request) =>
  request.method === 'GET' && Boolean(request.headers.get('accept')?.includes('text/html'));

/** Renders in a worker thread; resolves once both files exist (written under temporary names, then renamed). */
function renderInWorker(rendererUrl: string, options: object, beforeRoot: string, path: string): Promise<void> {
  const source = `
    const { workerData } = require('node:worker_threads');
    const { writeFileSync, renameSync } = require('node:fs');
    const { gzipSync } = require('node:zlib');
    import(workerData.rendererUrl).then(({ renderGraphiQL }) => {
      const page = renderGraphiQL(workerData.options).replace('<div id="root"></div>', () => workerData.beforeRoot + '<div id="root"></div>');
      const html = Buffer.from(page);
      const suffix = '.' + process.pid + '.' + Date.now();
      writeFileSync(workerData.path + suffix, html);
      writeFileSync(workerData.path + '.gz' + suffix, gzipSync(html, { level: 9 }));
      renameSync(workerData.path + '.gz' + suffix, workerData.path + '.gz');
      renameSync(workerData.path + suffix, workerData.path);
    });`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true, workerData: { rendererUrl, options, beforeRoot, path } });
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`GraphiQL rendering exited with ${code}`))));
  });
}

/**
 * A request handler serving the page rendered with `options` (and `beforeRoot`'s markup above
 * GraphiQL's root element), gzip-compressed when the client accepts it.
 */
export function graphiqlPage(options: object, dataDir: string, beforeRoot = ''): (request: Request) => Promise<Response> {
  const rendererUrl = import.meta.resolve(RENDERER);
  // The renderer's location names its version; with the options and the markup it names the page.
  const key = createHash('sha256').update(rendererUrl).update(JSON.stringify(options)).update(beforeRoot).digest('hex').slice(0, 16);
  const directory = join(dataDir, 'cache');
  const path = join(directory, `graphiql-${key}.html`);
  let rendered: Promise<void> | undefined;
  const ready = () =>
    (rendered ??= stat(path)
      .then(
        () => undefined,
        () => mkdir(directory, { recursive: true }).then(() => renderInWorker(rendererUrl, options, beforeRoot, path)),
      )
      .catch((error) => {
        rendered = undefined;
        throw error;
      }));
  return async (request) => {
    await ready();
    const gzip = /\bgzip\b/.test(request.headers.get('accept-encoding') ?? '');
    const file = gzip ? `${path}.gz` : path;
    const { size } = await stat(file);
    const headers: Record<string, string> = {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': String(size),
      Vary: 'Accept-Encoding',
      ...NEVER_FRAMED,
    };
    if (gzip) headers['Content-Encoding'] = 'gzip';
    return new Response(Readable.toWeb(createReadStream(file)) as ReadableStream, { headers });
  };
}
