import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { multipartBody } from '../helpers/multipart.js';

/**
 * LOG_LEVEL=trace is a setting an operator may choose while chasing a fault: what the libraries
 * under Corridor log at that level goes through the same redaction as Corridor's own lines.
 */
let ctx: TestContext;
const logLines: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
});
afterAll(() => ctx.close());

describe('an upload at trace level', () => {
  it('leaves its Authorization and Cookie headers out of every line, the multipart parser’s included', async () => {
    const cookie = 'session=cookie-secret-0123456789';
    const { payload, headers } = multipartBody([{ name: 'documentType', value: 'PASSPORT' }]);
    const from = logLines.length;
    const answer = await ctx.app.inject({ method: 'POST', url: `${BASE}/documents`, headers: { ...headers, authorization: ctx.platform.auth, cookie }, payload });
    expect(answer.statusCode).toBe(400);
    const written = logLines.slice(from);
    const text = written.join('\n');
    expect(text).not.toContain(ctx.platform.auth.slice('Basic '.length));
    expect(text).not.toContain(ctx.platform.secret);
    expect(text).not.toContain('cookie-secret');
    // The parser's own line is there, without the headers: the checks above looked at what it logs.
    const parser = written.map((line) => JSON.parse(line) as { msg: string; busboyOptions?: { headers?: unknown } }).find((line) => line.msg === 'Providing options to busboy');
    expect(parser?.busboyOptions?.headers).toBe('[redacted]');
  });
});
