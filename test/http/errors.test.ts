import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/platform/errors.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    env: { CORRIDOR_BODY_LIMIT_BYTES: '2048' },
    beforeReady: (app) => {
      app.get(`${BASE}/test/boom`, async () => {
        throw new Error('database password is hunter2');
      });
    },
  });
});
afterAll(() => ctx.close());

const auth = () => ({ authorization: ctx.platform.auth });

describe('error envelope (spec §2.3, §7)', () => {
  it('answers an unknown route with a 404 envelope', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/nope`, headers: auth() });
    expectEnvelope(response, 404, 'REFERENCE_NOT_FOUND');
  });

  it('answers a wrong method with 405 METHOD_NOT_ALLOWED and an Allow header', async () => {
    const response = await ctx.app.inject({ method: 'PUT', url: `${BASE}/config`, headers: auth() });
    expectEnvelope(response, 405, 'METHOD_NOT_ALLOWED');
    expect(response.headers.allow).toBe('GET, PATCH');
    const withParam = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/tokens/Token:00000000-0000-7000-8000-000000000000`, headers: auth() });
    expectEnvelope(withParam, 405, 'METHOD_NOT_ALLOWED');
    expect(withParam.headers.allow).toBe('GET, DELETE');
  });

  it('answers malformed JSON with 400 INVALID_INPUT', async () => {
    const response = await ctx.app.inject({
      method: 'POST', url: `${BASE}/tokens`, headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"name": ',
    });
    expectEnvelope(response, 400, 'INVALID_INPUT');
  });

  it('refuses prototype-poisoning JSON', async () => {
    const response = await ctx.app.inject({
      method: 'POST', url: `${BASE}/tokens`, headers: { ...auth(), 'content-type': 'application/json' },
      payload: '{"name":"a","permissions":["VIEW"],"__proto__":{"admin":true}}',
    });
    expectEnvelope(response, 400, 'INVALID_INPUT');
  });

  it('answers an unsupported content type with 400 INVALID_INPUT', async () => {
    const response = await ctx.app.inject({
      method: 'POST', url: `${BASE}/tokens`, headers: { ...auth(), 'content-type': 'text/plain' }, payload: 'hello',
    });
    expectEnvelope(response, 400, 'INVALID_INPUT');
  });

  it('answers an oversize body with a 4xx envelope', async () => {
    const response = await ctx.app.inject({
      method: 'POST', url: `${BASE}/tokens`, headers: auth(), payload: { name: 'x'.repeat(5000), permissions: ['VIEW'] },
    });
    expectEnvelope(response, 400, 'INVALID_INPUT');
  });

  it('turns an unexpected failure into a generic 500 that quotes the request id', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/test/boom`, headers: auth() });
    const body = expectEnvelope(response, 500, 'INTERNAL_ERROR');
    const requestId = response.headers['x-request-id'] as string;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.message).toContain(requestId);
    expect(body.details).toEqual({ requestId });
    expect(response.body).not.toContain('hunter2');
    expect(response.body).not.toContain('at ');
  });

  it('puts a correlation id on every response, distinct per request', async () => {
    const a = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    const b = await ctx.app.inject({ method: 'GET', url: `${BASE}/config` });
    expect(a.headers['x-request-id']).toBeTruthy();
    expect(b.headers['x-request-id']).toBeTruthy();
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });

  it('keeps a closed registry whose statuses are all HTTP error statuses', () => {
    for (const [code, status] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
    }
    expect(ERROR_CODES.DOCUMENT_REJECTED).toBe(422);
    expect(ERROR_CODES.SERVICE_SWITCH_ERROR).toBe(500);
    expect(ERROR_CODES.WALLET_SIGNATURE_BODY_MISMATCH).toBe(401);
  });
});
