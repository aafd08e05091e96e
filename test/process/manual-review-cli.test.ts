import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPdf } from '../helpers/document-files.js';
import { type CorridorProcess, type ProcessDatabase, createSandboxPlatform, processDatabase, runCli, startCorridor, waitUntil } from '../helpers/process.js';

/**
 * `corridor verifications decide`: how an operator ends a review waiting for a person
 * (PENDING_MANUAL_REVIEW), which is where every production review without a screening vendor
 * stops. The verification is made over HTTP by a running server; the decision is taken by the CLI
 * with the server stopped (an embedded database has one process at a time), and the server
 * started again answers it.
 */
describe('corridor verifications decide', () => {
  let database: ProcessDatabase;
  let server: CorridorProcess | undefined;
  let platform: { platformId: string; clientId: string; clientSecret: string };

  beforeAll(async () => {
    database = await processDatabase('manualreview');
    platform = await createSandboxPlatform(database.env);
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
    await database.cleanup();
  });

  const start = async () => (server = await startCorridor({ ...database.env, CORRIDOR_JOBS: 'true' }));
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`http://127.0.0.1:${server!.port}/2025-10-13${path}`, {
      ...init,
      headers: { authorization: `Basic ${Buffer.from(`${platform.clientId}:${platform.clientSecret}`).toString('base64')}`, ...init.headers },
    });
  const json = (path: string, method: string, body: unknown) => api(path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('decides a waiting verification once; refuses a second verdict and bad arguments', async () => {
    await start();
    expect((await json('/customers/settings', 'PATCH', { sandboxAutoApprove: false })).status).toBe(200);
    const created = await json('/customers', 'POST', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: 'SANDBOX_MANUAL_REVIEW-cli',
      fullName: 'Jane Doe',
      birthDate: '1990-01-15',
      nationality: 'US',
      address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
    });
    expect(created.status).toBe(201);
    const customerId = ((await created.json()) as { id: string }).id;
    const form = new FormData();
    for (const [name, value] of Object.entries({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US' })) form.append(name, value);
    form.append('file', new Blob([new Uint8Array(await validPdf())], { type: 'application/pdf' }), 'passport.pdf');
    expect((await api('/documents', { method: 'POST', body: form })).status).toBe(201);
    const verificationId = ((await (await json('/verifications', 'POST', { customerId })).json()) as { id: string }).id;
    // The server's job worker runs the review.
    const status = async () => ((await (await api(`/verifications/${verificationId}`)).json()) as { verificationStatus: string }).verificationStatus;
    await waitUntil('the review waits for a person', async () => (await status()) === 'PENDING_MANUAL_REVIEW', 60_000, 200);
    expect(await server!.stop()).toBe(0);

    const decide = (...args: string[]) => runCli(database.env, 'verifications', 'decide', ...args);
    const usage = await decide(verificationId, '--platform', platform.platformId, '--status', 'MAYBE');
    expect(usage.code, usage.output).toBe(2);
    expect(usage.output).toContain('--status must be APPROVED or REJECTED');
    const unknown = await decide('Verification:019542f5-b3e7-7d02-8000-000000000001', '--platform', platform.platformId, '--status', 'APPROVED');
    expect(unknown.code, unknown.output).toBe(1);
    expect(unknown.output).toContain('REFERENCE_NOT_FOUND');

    const approved = await decide(verificationId, '--platform', platform.platformId, '--status', 'APPROVED');
    expect(approved.code, approved.output).toBe(0);
    expect(JSON.parse(approved.stdout.trim().split('\n').pop()!)).toMatchObject({ id: verificationId, verificationStatus: 'APPROVED', errors: [] });
    const second = await decide(verificationId, '--platform', platform.platformId, '--status', 'REJECTED', '--reason', 'changed my mind');
    expect(second.code, second.output).toBe(1);
    expect(second.output).toContain('CONFLICT');

    await start();
    expect(((await (await api(`/verifications/${verificationId}`)).json()) as { verificationStatus: string }).verificationStatus).toBe('APPROVED');
    expect(((await (await api(`/customers/${customerId}`)).json()) as { kycStatus: string }).kycStatus).toBe('APPROVED');
  }, 240_000);
});
