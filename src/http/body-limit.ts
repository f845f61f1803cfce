// The request body's limits, checked before anything parses it: 1 MiB, a GraphQL multipart request one
// largest file more; upload routes that stream their bodies count their own bytes as they arrive.
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Config } from '../config.js';
import { jsonResponse } from '../rest/envelope.js';
import { streamsBody } from '../rest/dispatch.js';
import { restRoutes } from '../rest/routes.js';

/** No request of this API but uploads needs more; bigger bodies are refused before parsing. */
export const MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = (limit: string) => () =>
  jsonResponse({ result: 'error', msg: `Request body too large (limit: ${limit})`, code: 'BAD_REQUEST' }, 413);

/**
 * At most `maxBytes` of body. A declared length is checked from the headers alone (Node's parser
 * never delivers more than it declares): hono's bodyLimit looks at the request's body, which builds
 * a full fetch Request (stream, abort signal) and takes the body off the adapter's direct path to
 * text() and json(). Chunked bodies are counted by hono's bodyLimit as they arrive.
 */
function bodyLimitOf(maxBytes: number, label: string): MiddlewareHandler {
  const onError = tooLarge(label);
  const counted = bodyLimit({ maxSize: maxBytes, onError });
  return (c, next) => {
    if (c.req.header('transfer-encoding') !== undefined) return counted(c, next);
    return Number(c.req.header('content-length') ?? '0') > maxBytes ? Promise.resolve(onError()) : next();
  };
}

/** A body needs a length or a transfer encoding (RFC 9112 section 6.3). */
const mayHaveBody = (c: Context) => (c.req.header('content-length') ?? '0') !== '0' || c.req.header('transfer-encoding') !== undefined;

const isMultipart = (request: Request) => /^multipart\/form-data/i.test(request.headers.get('content-type') ?? '');

export function bodyLimits(uploads: Config['uploads']): MiddlewareHandler {
  const standardLimit = bodyLimitOf(MAX_BODY_BYTES, '1 MiB');
  // GraphQL multipart requests are parsed whole before the resolver runs: one largest file and 1 MiB more.
  const { maxFileUploadSizeMib, maxEmojiFileSizeMib } = uploads;
  const graphqlUploadMib = Math.max(maxFileUploadSizeMib, maxEmojiFileSizeMib) + 1;
  const graphqlUploadLimit = bodyLimitOf(graphqlUploadMib * 1024 * 1024, `${graphqlUploadMib} MiB`);
  return (c, next) => {
    // Most requests carry no body; checking for one through the request object would build a full
    // fetch Request (stream, abort signal) for each of them.
    if (!mayHaveBody(c)) return next();
    // Upload routes stream their bodies and enforce their own limits as the bytes arrive.
    if (streamsBody(restRoutes, c.req.method, c.req.path)) return next();
    if (c.req.path === '/graphql' && isMultipart(c.req.raw)) return graphqlUploadLimit(c, next);
    return standardLimit(c, next);
  };
}
