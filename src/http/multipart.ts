// Reads a multipart/form-data body as it arrives (busboy): the first file part goes to a handler
// that streams it where it belongs, later file parts are counted and dropped, and the caller
// learns the number of file parts and the outcome of the first only when the whole body was read.
import { Readable } from 'node:stream';
import busboy from 'busboy';
import { isFileName, type FileOutcome, type IncomingFile, type ReceivedFile } from '../domain/uploads/upload-file.js';
import { badRequest } from '../domain/errors.js';

export interface ReceivedFiles<T> extends ReceivedFile<T> {
  /** Text fields of the form. */
  fields: Map<string, string>;
}

const isMultipart = (request: Request) => /^multipart\/form-data/i.test(request.headers.get('content-type') ?? '');

/**
 * `discard` undoes a successful `handleFirst` when the body turns out broken (a malformed part, a
 * dropped connection): then the error is thrown and nothing stays behind.
 */
export async function receiveFiles<T>(
  request: Request,
  handleFirst: (file: IncomingFile) => Promise<T>,
  discard: (value: T) => Promise<void>,
): Promise<ReceivedFiles<T>> {
  const fields = new Map<string, string>();
  if (!isMultipart(request) || !request.body) return { count: 0, fields };
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': request.headers.get('content-type')! },
      defParamCharset: 'utf8',
      limits: { fieldSize: 1024 * 1024, fields: 1000 },
    });
  } catch {
    throw badRequest('Malformed multipart body');
  }
  let count = 0;
  let current: Readable | undefined;
  let first: Promise<FileOutcome<T>> | undefined;
  const body = Readable.fromWeb(request.body as import('node:stream/web').ReadableStream);
  const parsed = new Promise<void>((resolve, reject) => {
    parser.on('field', (name, value) => fields.set(name, value));
    parser.on('file', (_field, stream, info) => {
      current = stream;
      if (!isFileName(info.filename ?? '')) return void stream.resume();
      count += 1;
      if (count > 1) return void stream.resume();
      first = handleFirst({ fileName: info.filename ?? '', contentType: info.mimeType, data: stream }).then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      );
    });
    parser.on('close', resolve);
    parser.on('error', () => reject(badRequest('Malformed multipart body')));
    body.on('error', reject);
  }).catch((error: unknown) => {
    // The file part being read ends with the body: its handler must see the failure too.
    current?.destroy(error as Error);
    throw error;
  });
  body.pipe(parser);
  try {
    await parsed;
  } catch (error) {
    body.destroy();
    const outcome = await first;
    if (outcome?.ok) await discard(outcome.value);
    throw error;
  }
  return { count, first: await first, fields };
}
