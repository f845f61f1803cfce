// The response validator itself: it must refuse what clients could not parse, or every REST test
// that relies on it would pass vacuously.
import { describe, expect, test } from 'vitest';
import { expectMatchesOpenApi } from '../support/openapi.js';

const attachment = {
  id: 1,
  name: 'plan.pdf',
  path_id: '2/ce/DfOkzwdg_IwlrN3myw3KGtiJ/plan.pdf',
  size: 571946,
  create_time: 1588145417,
  message_ids: [102, 103],
};
const listing = (a: object) => ({ result: 'success', msg: '', attachments: [a], upload_space_used: 3_000_571_946 });

describe('GET /attachments', () => {
  test('accepts the documented shape, with or without ignored_parameters_unsupported', () => {
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 200, body: listing(attachment) })).not.toThrow();
    const withIgnored = { ...listing(attachment), ignored_parameters_unsupported: ['foo'] };
    expect(() => expectMatchesOpenApi('get', '/attachments', { status: 200, body: withIgnored })).not.toThrow();
  });

  test('refuses the pre-472 `messages` field, a string total and a string size', () => {
    const old = { ...attachment, messages: [{ id: 102, date_sent: 1588145417 }] };
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 200, body: listing(old) })).toThrow(
      /must NOT have additional properties/,
    );
    // The excerpt requires no data field, but types them: a total that is not an integer fails.
    expect(() =>
      expectMatchesOpenApi('GET', '/attachments', { status: 200, body: { ...listing(attachment), upload_space_used: '3000571946' } }),
    ).toThrow(/upload_space_used must be integer/);
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 200, body: listing({ ...attachment, size: '571946' }) })).toThrow(
      /must be integer/,
    );
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 200, body: { ...listing(attachment), result: 'error' } })).toThrow();
  });
});

describe('DELETE /realm/emoji/{emoji_name}', () => {
  test('200 is SimpleSuccess', () => {
    expect(() =>
      expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', { status: 200, body: { result: 'success', msg: '' } }),
    ).not.toThrow();
    expect(() =>
      expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', { status: 200, body: { result: 'success', msg: '', emoji: {} } }),
    ).toThrow();
  });

  test('404 is a CodedError without extra fields', () => {
    const notFound = { result: 'error', msg: "Emoji 'green_tick' does not exist", code: 'BAD_REQUEST' };
    expect(() => expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', { status: 404, body: notFound })).not.toThrow();
    expect(() => expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', { status: 404, body: { result: 'error', msg: 'x' } })).toThrow(
      /code/,
    );
    expect(() =>
      expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', { status: 404, body: { ...notFound, var_name: 'x' } }),
    ).toThrow();
  });
});

describe('POST /invites', () => {
  test('its 400 oneOf of identical CodedError branches is validated as anyOf', () => {
    const body = { result: 'error', msg: 'You must specify at least one email address.', code: 'BAD_REQUEST' };
    expect(() => expectMatchesOpenApi('POST', '/invites', { status: 400, body })).not.toThrow();
    const failed = {
      result: 'error',
      msg: "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      errors: [['a@example.com', 'Already has an account.', false]],
      sent_invitations: true,
      license_limit_reached: false,
      daily_limit_reached: false,
      code: 'INVITATION_FAILED',
    };
    expect(() => expectMatchesOpenApi('POST', '/invites', { status: 400, body: failed })).not.toThrow();
    expect(() => expectMatchesOpenApi('POST', '/invites', { status: 400, body: { ...failed, errors: [[1, {}, null]] } })).toThrow();
  });
});

describe('statuses the excerpt does not document', () => {
  test('errors fall back to CodedErrorBase (extra data fields allowed, code required)', () => {
    const limited = { result: 'error', msg: 'API usage exceeded rate limit', 'retry-after': 1.5, code: 'RATE_LIMIT_HIT' };
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 429, body: limited })).not.toThrow();
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 401, body: { result: 'error', msg: 'Invalid API key' } })).toThrow(
      /code/,
    );
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 401, body: { result: 'success', msg: '', code: 'X' } })).toThrow();
  });

  test('405 is checked as the dispatcher answers it (no code)', () => {
    const body = { result: 'error', msg: 'Method Not Allowed', allowed_methods: ['GET', 'HEAD'] };
    expect(() => expectMatchesOpenApi('POST', '/attachments', { status: 405, body })).toThrow(/does not describe POST/);
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 405, body })).not.toThrow();
  });

  test('an undocumented success status or path is a mistake in the test', () => {
    expect(() => expectMatchesOpenApi('GET', '/attachments', { status: 204, body: null })).toThrow(/documents no 204/);
    expect(() => expectMatchesOpenApi('GET', '/server_settings', { status: 200, body: {} })).toThrow(/Unresolvable|does not describe/);
  });
});
