import { describe, expect, it } from 'vitest';
import { systemResolver } from '../../src/platform/address-guard.js';
import { guardedRequest } from '../../src/platform/guarded-request.js';

/** platform/guarded-request.ts never throws: every failure is an answer its callers (UMA, JWKS) read. */
describe('guardedRequest', () => {
  it('answers a URL of a scheme node:http does not speak, rather than throwing', async () => {
    for (const href of ['ftp://127.0.0.1/payreq', 'file:///etc/passwd', 'data:application/json,{}']) {
      for (const guard of [true, false]) {
        const answer = await guardedRequest({ url: new URL(href), method: 'GET', accept: 'application/json', maxBytes: 1024, timeoutMs: 1000, guard, resolver: systemResolver });
        expect(answer).toEqual({ ok: false, reason: `${new URL(href).protocol} is not http or https` });
      }
    }
  });
});
