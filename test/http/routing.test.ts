// Every route is one hono's RegExpRouter takes: one it refuses (a fixed segment beside a parameter
// followed by more segments, as `reset/done/` beside `reset/:uid/:token/` was) makes the app match
// every request with its slower TrieRouter instead.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startCountingApp } from '../support/query-count.js';

describe('routing', () => {
  let app: Awaited<ReturnType<typeof startCountingApp>>;
  beforeAll(async () => {
    app = await startCountingApp();
  });
  afterAll(() => app.close());

  test('the app matches with RegExpRouter', async () => {
    await app.request('/livez', {});
    expect(app.http.router.name).toBe('SmartRouter + RegExpRouter');
  });

  test('the password reset pages: done, a link, and anything else under reset/ a 404', async () => {
    const done = (await app.request('/accounts/password/reset/done/', {})).response;
    expect([done.status, await done.text()]).toEqual([200, expect.stringContaining('Check your e-mail')]);
    const link = (await app.request('/accounts/password/reset/abc/not-a-token/', {})).response;
    expect([link.status, await link.text()]).toEqual([404, expect.stringContaining('Password reset unsuccessful')]);
    const other = (await app.request('/accounts/password/reset/other/', {})).response;
    expect([other.status, await other.json()]).toEqual([404, { result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }]);
  });
});
