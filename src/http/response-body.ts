// Large text bodies leave the process as bytes. V8 returns a long JSON.stringify result as a rope
// (a cons string). Written as text, Node copies it twice more before encoding it: once to measure
// its length, and once more after joining it to the response's headers so that both go in one
// write. Each copy of a 100+ KB answer is a large-object allocation, mapped and unmapped around it
// (the profile of a 500-file GraphQL list: 8 % of the server's CPU). Encoded once into a
// Buffer, it is written beside the headers as it is.
/** Bodies below this many characters stay text: their copies cost less than a Buffer. */
const LARGE_BODY_CHARACTERS = 16 * 1024;

export function sentBody(text: string): string | Uint8Array<ArrayBuffer> {
  return text.length >= LARGE_BODY_CHARACTERS ? Buffer.from(text) : text;
}

/**
 * A Response class whose large text bodies are encoded once (Yoga builds its answers with it). Made
 * from the Response in use when it is called: @hono/node-server puts its lightweight Response in
 * place of the runtime's when the server is created, after this module loads, and a subclass of the
 * runtime's own would cost every answer a full fetch Response read back as a stream.
 */
export function encodedBodyResponse(Base: typeof Response = globalThis.Response): typeof Response {
  return class EncodedBodyResponse extends Base {
    constructor(body?: BodyInit | null, init?: ResponseInit) {
      super(typeof body === 'string' ? sentBody(body) : body, init);
    }
  };
}
