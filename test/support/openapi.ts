// Validates REST responses against the Zulip OpenAPI excerpt in docs/reference, so every REST test
// checks that real clients could parse what we answer.
//
// - `$ref`s are resolved here (responses and schemas alike) and every `oneOf` is validated as `anyOf`:
//   the excerpt's POST /invites 400 schema is a `oneOf` of CodedError branches that differ only in
//   their examples, so a plain CodedError body matches several branches and strict `oneOf` rejects
//   it (see the excerpt's header).
// - A status the excerpt documents for the path is validated strictly against its schema
//   (`additionalProperties: false` included: an attachment with the old `messages` field fails).
// - A status the excerpt does not document (401, 429, the undocumented 400s ...) falls back to the
//   generic error schema `CodedErrorBase`: `result: "error"`, string `msg` and string `code`, extra
//   fields allowed, because the reference's error classes add data fields before `code`
//   (`var_name`, `retry-after`, ...). The strict `CodedError` would refuse those real bodies.
// - 405 comes from method dispatch before any endpoint runs, and the reference answers it without
//   `code`: it is checked as `result: "error"`, `msg` and the `allowed_methods` list.
// - An undocumented 2xx, or a path/method the excerpt does not describe, is a mistake in the test
//   and throws.
// The function is synchronous (it throws at once); `await expectMatchesOpenApi(...)` works too.
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { parse } from 'yaml';

const EXCERPT = new URL('../../docs/reference/zulip-openapi-excerpt.yaml', import.meta.url);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

let loaded: { document: JsonObject; ajv: Ajv } | undefined;
const compiled = new Map<string, { validate: ValidateFunction; source: string }>();

function load() {
  if (!loaded) {
    const ajv = new Ajv({ strict: false, allErrors: true });
    // ajv-formats is CommonJS: depending on the loader its default import is the plugin or its module.
    const imported = addFormatsModule as unknown as FormatsPlugin | { default: FormatsPlugin };
    const addFormats = 'default' in imported ? imported.default : imported;
    addFormats(ajv);
    loaded = { document: parse(readFileSync(EXCERPT, 'utf8')) as JsonObject, ajv };
  }
  return loaded;
}

function pointer(document: JsonObject, ref: string): Json {
  if (!ref.startsWith('#/')) throw new Error(`Only local $refs are supported, got ${ref}`);
  let node: Json = document;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node) || !(key in node)) throw new Error(`Unresolvable $ref ${ref}`);
    node = node[key]!;
  }
  return node;
}

/** A copy of `node` with every `$ref` replaced by its target and every `oneOf` renamed `anyOf`. */
function resolve(document: JsonObject, node: Json, seen: readonly string[] = []): Json {
  if (Array.isArray(node)) return node.map((item) => resolve(document, item, seen));
  if (!isObject(node)) return node;
  if (typeof node.$ref === 'string') {
    if (seen.includes(node.$ref)) throw new Error(`Cyclic $ref ${node.$ref}`);
    return resolve(document, pointer(document, node.$ref), [...seen, node.$ref]);
  }
  const copy: JsonObject = {};
  for (const [key, value] of Object.entries(node)) copy[key === 'oneOf' ? 'anyOf' : key] = resolve(document, value, seen);
  return copy;
}

const METHOD_NOT_ALLOWED_SCHEMA = {
  type: 'object',
  required: ['result', 'msg', 'allowed_methods'],
  additionalProperties: false,
  properties: { result: { enum: ['error'] }, msg: { type: 'string' }, allowed_methods: { type: 'array', items: { type: 'string' } } },
};

function schemaFor(method: string, path: string, status: number): { schema: Json; source: string } {
  const { document } = load();
  const operation = pointer(document, `#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  const responses = isObject(operation) ? (operation[method.toLowerCase()] as JsonObject | undefined)?.responses : undefined;
  if (!isObject(responses)) throw new Error(`The OpenAPI excerpt does not describe ${method.toUpperCase()} ${path}`);
  const documented = responses[String(status)];
  if (documented !== undefined) {
    const response = resolve(document, documented) as JsonObject;
    const schema = (response.content as JsonObject | undefined)?.['application/json'] as JsonObject | undefined;
    if (!schema?.schema) throw new Error(`${method} ${path} ${status} has no application/json schema`);
    return { schema: schema.schema, source: `documented ${status}` };
  }
  if (status === 405) return { schema: METHOD_NOT_ALLOWED_SCHEMA, source: 'method dispatch 405' };
  if (status >= 400)
    return { schema: resolve(document, { $ref: '#/components/schemas/CodedErrorBase' }), source: 'generic CodedErrorBase' };
  throw new Error(`The OpenAPI excerpt documents no ${status} response for ${method.toUpperCase()} ${path}`);
}

function validatorFor(method: string, path: string, status: number) {
  const key = `${method.toUpperCase()} ${path} ${status}`;
  let entry = compiled.get(key);
  if (!entry) {
    const { schema, source } = schemaFor(method, path, status);
    entry = { validate: load().ajv.compile(schema as object), source };
    compiled.set(key, entry);
  }
  return { ...entry, key };
}

/**
 * Throws when `response.body` does not match what the OpenAPI excerpt says `method path` answers
 * with `response.status`. `path` is the template, e.g. '/realm/emoji/{emoji_name}'.
 */
export function expectMatchesOpenApi(method: string, path: string, response: { status: number; body: unknown }): void {
  const { validate, key, source } = validatorFor(method, path, response.status);
  if (validate(response.body)) return;
  const problems = (validate.errors ?? []).map((e) => `  ${e.instancePath || '(body)'} ${e.message} ${JSON.stringify(e.params)}`);
  throw new Error(
    `${key}: the body does not match the OpenAPI schema (${source}):\n${problems.join('\n')}\nbody: ${JSON.stringify(response.body)}`,
  );
}
