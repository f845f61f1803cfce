// Typed request parameters, parsed the way the reference's @typed_endpoint does (behaviour.md 1.3):
// form body first, then the query string, last value wins; declared order; first failure wins;
// JSON-typed values validated strictly, with the reference's message templates.
import { DomainError } from '../domain/errors.js';

/** Validates a decoded JSON value; `at` is the name with its nested position, e.g. `stream_ids[0]`. */
export type JsonCheck<T> = (value: unknown, at: string) => T;

export interface ParamSpec<T> {
  /** Raw text (no JSON decoding), or a JSON text validated by the check. */
  read: (raw: string, name: string) => T;
}

export type ParamSource = ReadonlyMap<string, string>;

function fail(message: string): never {
  throw new DomainError(message);
}

export const jsonInt: JsonCheck<number> = (value, at) =>
  typeof value === 'number' && Number.isInteger(value) ? value : fail(`${at} is not an integer`);

/** An integer a JavaScript number holds exactly: past 2^53 JSON's digits would be silently rounded. */
export const jsonSafeInt: JsonCheck<number> = (value, at) =>
  typeof value === 'number' && Number.isSafeInteger(value) ? value : fail(`${at} is not an integer`);

export const jsonBool: JsonCheck<boolean> = (value, at) => (typeof value === 'boolean' ? value : fail(`${at} is not a boolean`));

export const jsonList =
  <T>(item: JsonCheck<T>): JsonCheck<T[]> =>
  (value, at) =>
    Array.isArray(value) ? value.map((v, i) => item(v, `${at}[${i}]`)) : fail(`${at} is not a list`);

export const jsonNullable =
  <T>(inner: JsonCheck<T>): JsonCheck<T | null> =>
  (value, at) =>
    value === null ? null : inner(value, at);

export const jsonOneOf =
  <T>(inner: JsonCheck<T>, allowed: readonly T[]): JsonCheck<T> =>
  (value, at) => {
    const parsed = inner(value, at);
    return allowed.includes(parsed) ? parsed : fail(`Invalid ${at}: Value error, Not in the list of possible values`);
  };

/** Stands in for a JSON float, which the reference (Python) never accepts as an integer: `1.0`, `1e3`. */
const FLOAT = Object.freeze({ float: true });
const FLOAT_MARK = '{"\\u0000float":0}';

/** The JSON text with every number written as a float replaced by FLOAT_MARK. */
function markFloats(text: string): string {
  return text.replace(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g, (token) =>
    token.startsWith('"') || /^-?\d+$/.test(token) ? token : FLOAT_MARK,
  );
}

function parseJson(raw: string): unknown {
  JSON.parse(raw); // throws on invalid JSON; the marked text is only parsed once it is known valid
  return JSON.parse(markFloats(raw), (_key, value) => (value && typeof value === 'object' && '\u0000float' in value ? FLOAT : value));
}

export function json<T>(check: JsonCheck<T>): ParamSpec<T> {
  return {
    read(raw, name) {
      let value: unknown;
      try {
        value = parseJson(raw);
      } catch {
        fail(`${name} is not valid JSON`);
      }
      return check(value, name);
    },
  };
}

/** Decision 10: PostgreSQL text cannot hold U+0000. */
export const nulRefusal = (name: string) => new DomainError(`${name} contains NULL (0x00) characters.`);

/** Raw text; NUL characters are refused unless `allowNul` (a value checked piece by piece later). */
export function text(options: { maxLength?: number; allowNul?: boolean } = {}): ParamSpec<string> {
  return {
    read(raw, name) {
      if (!options.allowNul && raw.includes('\0')) throw nulRefusal(name);
      if (options.maxLength !== undefined && [...raw].length > options.maxLength) {
        fail(`${name} is too long (limit: ${options.maxLength} characters)`);
      }
      return raw;
    },
  };
}

export function missing(name: string): DomainError {
  return new DomainError(`Missing '${name}' argument`, { code: 'REQUEST_VARIABLE_MISSING', data: { var_name: name } });
}

type Declared = Record<string, { spec: ParamSpec<unknown>; required: boolean; plainMissing?: boolean }>;
type Parsed<D extends Declared> = {
  [K in keyof D]: D[K] extends { spec: ParamSpec<infer T>; required: true }
    ? T
    : D[K] extends { spec: ParamSpec<infer T> }
      ? T | undefined
      : never;
};

export const required = <T>(spec: ParamSpec<T>) => ({ spec, required: true as const });
/**
 * Required, but its absence is the reference's plain error (code BAD_REQUEST, no var_name), where the
 * reference checks it in its own code rather than through its usual missing-argument error.
 */
export const requiredPlainly = <T>(spec: ParamSpec<T>) => ({ spec, required: true as const, plainMissing: true });
export const optional = <T>(spec: ParamSpec<T>) => ({ spec, required: false as const });

/**
 * Parses the declared parameters in declaration order. Returns the values (absent optional ones
 * are undefined) and the sorted names of request parameters that nothing declared.
 */
export function parseParams<D extends Declared>(source: ParamSource, declared: D): { values: Parsed<D>; ignored: string[] } {
  const values: Record<string, unknown> = {};
  for (const [name, { spec, required: isRequired, plainMissing }] of Object.entries(declared)) {
    const raw = source.get(name);
    if (raw === undefined) {
      if (isRequired) throw plainMissing ? new DomainError(`Missing '${name}' argument`) : missing(name);
      continue;
    }
    values[name] = spec.read(raw, name);
  }
  const ignored = [...source.keys()].filter((name) => !(name in declared)).sort();
  return { values: values as Parsed<D>, ignored };
}

/** For endpoints that take no parameters: every one sent is unknown (reported on success, Decision 5). */
export const undeclaredParameters = (source: ParamSource): string[] => parseParams(source, {}).ignored;
