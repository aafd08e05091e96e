import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * A request's log line gives its path without the query string, whose filters name people; the
 * path's own segments that name a person (a UMA address or user name) or hold a claimable code
 * (an invitation's) are left out too, whether or not a route matched and whatever the answer.
 */
let ctx: TestContext;
const logLines: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
});
afterAll(() => ctx.close());

describe('the request log line', () => {
  it('leaves out UMA addresses, UMA user names and invitation codes in the path', async () => {
    const calls = [
      { method: 'GET', url: `${BASE}/receiver/uma/${encodeURIComponent('$alice.liddell@remote.example')}` },
      { method: 'GET', url: `${BASE}/invitations/k3v9q2m8xz` },
      { method: 'POST', url: `${BASE}/invitations/k3v9q2m8xz/claim` },
      { method: 'DELETE', url: `${BASE}/invitations/k3v9q2m8xz/cancel` },
      { method: 'GET', url: '/.well-known/lnurlp/alice.liddell?amount=1000' },
      { method: 'GET', url: '/uma/payreq/alice.liddell' },
    ] as const;
    logLines.length = 0;
    for (const call of calls) await ctx.app.inject(call);
    const requests = logLines.filter((line) => line.includes('"msg":"request"'));
    expect(requests).toHaveLength(calls.length);
    expect(logLines.filter((line) => /alice|k3v9q2m8xz/.test(line))).toEqual([]);
    const urls = requests.map((line) => (JSON.parse(line) as { url: string }).url);
    expect(urls).toEqual([
      `${BASE}/receiver/uma/[redacted]`,
      `${BASE}/invitations/[redacted]`,
      `${BASE}/invitations/[redacted]/claim`,
      `${BASE}/invitations/[redacted]/cancel`,
      '/.well-known/lnurlp/[redacted]',
      '/uma/payreq/[redacted]',
    ]);
  });
});
