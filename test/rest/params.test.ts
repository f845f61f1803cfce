// The reference's parameter parsing rules (behaviour.md 1.3), on the parser itself.
import { describe, expect, test } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import {
  json,
  jsonBool,
  jsonInt,
  jsonList,
  jsonNullable,
  jsonOneOf,
  optional,
  parseParams,
  required,
  text,
} from '../../src/rest/params.js';

const declared = {
  flag: optional(json(jsonBool)),
  ids: required(json(jsonList(jsonInt))),
  limit: optional(json(jsonNullable(jsonInt))),
  name: required(text({ maxLength: 5 })),
  role: optional(json(jsonOneOf(jsonInt, [100, 400]))),
};

function failure(source: Record<string, string>) {
  try {
    parseParams(new Map(Object.entries(source)), declared);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    const { message, code, data } = error as DomainError;
    return { message, code, data };
  }
  throw new Error('expected a failure');
}

describe('parseParams', () => {
  test('reads JSON-typed and raw values, leaves absent optional ones undefined, reports the rest', () => {
    const { values, ignored } = parseParams(
      new Map(Object.entries({ zeta: '1', ids: '[1, 2]', name: 'null', limit: 'null', alpha: '' })),
      declared,
    );
    expect(values).toEqual({ ids: [1, 2], name: 'null', limit: null });
    expect(ignored).toEqual(['alpha', 'zeta']);
  });

  test('the first failing parameter in declaration order wins', () => {
    expect(failure({ flag: 'yes', name: 'far too long' })).toEqual({ message: 'flag is not valid JSON', code: 'BAD_REQUEST', data: {} });
    expect(failure({ flag: 'true' })).toEqual({
      message: "Missing 'ids' argument",
      code: 'REQUEST_VARIABLE_MISSING',
      data: { var_name: 'ids' },
    });
  });

  test.each([
    [{ flag: '1', ids: '[]', name: 'a' }, 'flag is not a boolean'],
    [{ ids: '', name: 'a' }, 'ids is not valid JSON'],
    [{ ids: '{"a": 1}', name: 'a' }, 'ids is not a list'],
    [{ ids: '[1, "2"]', name: 'a' }, 'ids[1] is not an integer'],
    [{ ids: '[1.5]', name: 'a' }, 'ids[0] is not an integer'],
    [{ ids: '[]', limit: '"3"', name: 'a' }, 'limit is not an integer'],
    [{ ids: '[]', name: 'ééééé!' }, 'name is too long (limit: 5 characters)'],
    [{ ids: '[]', name: 'a', role: '300' }, 'Invalid role: Value error, Not in the list of possible values'],
    [{ ids: '[]', name: 'a', role: 'true' }, 'role is not an integer'],
  ])('%j -> %s', (source, message) => {
    expect(failure(source).message).toBe(message);
  });

  test('length counts Unicode code points, not UTF-16 units', () => {
    expect(parseParams(new Map(Object.entries({ ids: '[]', name: '😀😀😀😀😀' })), declared).values.name).toBe('😀😀😀😀😀');
  });
});
