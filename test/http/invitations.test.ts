import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
let inviting: TestPlatform;
let claiming: TestPlatform;
const catalogue = eventCatalogue();

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;
async function customer(p: TestPlatform, umaAddress: string, extra: Record<string, unknown> = {}): Promise<void> {
  const response = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `inv-${++seq}`, fullName: 'Ann Lee', umaAddress, ...extra });
  expect(response.statusCode, response.body).toBe(201);
}

interface Invitation {
  code: string;
  status: string;
  url: string;
  inviterUma: string;
  inviteeUma?: string;
  claimedAt?: string;
  expiresAt?: string;
  createdAt: string;
  firstName?: string;
  amountToSend?: { amount: number; currency: { code: string; decimals: number } };
}

async function invite(body: Record<string, unknown> = {}): Promise<Invitation> {
  const response = await call(inviting, 'POST', '/invitations', { inviterUma: '$alice@a.example.com', ...body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Invitation;
}

const eventsOf = (code: string) => ctx.handle.db.selectFrom('events').selectAll().where('resource_id', '=', code).orderBy('id').execute();

beforeAll(async () => {
  ctx = await createTestContext();
  inviting = ctx.platform;
  claiming = await ctx.newPlatform();
  expect((await call(inviting, 'PATCH', '/config', { umaDomain: 'a.example.com' })).statusCode).toBe(200);
  expect((await call(claiming, 'PATCH', '/config', { umaDomain: 'b.example.com' })).statusCode).toBe(200);
  await customer(inviting, '$alice@a.example.com', { currencies: ['EUR'] });
  await customer(inviting, '$bob@a.example.com');
});
afterAll(() => ctx.close());

describe('POST /invitations', () => {
  it('creates a PENDING invitation at the platform UMA domain, in the inviter currency', async () => {
    const invitation = await invite({ firstName: 'Alice', amountToSend: 12550 });
    expect(invitation).toEqual({
      code: expect.stringMatching(/^[0-9a-z]{10}$/),
      createdAt: ctx.clock.now().toISOString(),
      url: `https://a.example.com/i/${invitation.code}`,
      inviterUma: '$alice@a.example.com',
      status: 'PENDING',
      firstName: 'Alice',
      amountToSend: { amount: 12550, currency: { code: 'EUR', name: 'Euro', symbol: '€', decimals: 2 } },
    });
    expect((await call(claiming, 'GET', `/invitations/${invitation.code}`)).json()).toEqual(invitation);
  });

  it('uses the platform currency for an inviter without one', async () => {
    const invitation = await invite({ inviterUma: '$bob@a.example.com', amountToSend: 500 });
    expect(invitation.amountToSend).toEqual({ amount: 500, currency: { code: 'USD', name: 'US Dollar', symbol: '$', decimals: 2 } });
  });

  it('takes the addresses of a platform whose umaDomain carries a port', async () => {
    const local = await ctx.newPlatform();
    expect((await call(local, 'PATCH', '/config', { umaDomain: 'localhost:18080' })).statusCode).toBe(200);
    await customer(local, '$dev@localhost:18080');
    const response = await call(local, 'POST', '/invitations', { inviterUma: '$dev@localhost:18080' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json()).toMatchObject({ inviterUma: '$dev@localhost:18080', url: expect.stringMatching(/^https?:\/\/localhost:18080\/i\//) });
    expectEnvelope(await call(local, 'POST', '/invitations', { inviterUma: '$dev@localhost:' }), 400, 'INVALID_UMA_ADDRESS');
  });

  it('takes an inviter whose user part has a +, as every UMA path does', async () => {
    await customer(inviting, '$ann+gifts@a.example.com');
    const invitation = await invite({ inviterUma: '$ann+gifts@a.example.com' });
    expect(invitation.inviterUma).toBe('$ann+gifts@a.example.com');
    expectEnvelope(await call(inviting, 'POST', '/invitations', { inviterUma: '$ann+gifts@a..example.com' }), 400, 'INVALID_UMA_ADDRESS');
  });

  it('needs an UMA domain: INVITATIONS_NOT_CONFIGURED', async () => {
    const bare = await ctx.newPlatform();
    expectEnvelope(await call(bare, 'POST', '/invitations', { inviterUma: '$x@y.example.com' }), 400, 'INVITATIONS_NOT_CONFIGURED');
  });

  it('refuses malformed addresses, strangers, past expiry and unknown fields, creating nothing', async () => {
    const before = await ctx.handle.db.selectFrom('invitations').select((eb) => eb.fn.countAll<bigint>().as('n')).executeTakeFirstOrThrow();
    const malformed = expectEnvelope(await call(inviting, 'POST', '/invitations', { inviterUma: 'alice@a.example.com' }), 400, 'INVALID_UMA_ADDRESS');
    expect(malformed.details).toEqual({ field: 'inviterUma', value: 'alice@a.example.com' });
    expectEnvelope(await call(inviting, 'POST', '/invitations', { inviterUma: '$al ice@a.example.com' }), 400, 'INVALID_UMA_ADDRESS');
    const stranger = expectEnvelope(await call(inviting, 'POST', '/invitations', { inviterUma: '$carol@a.example.com' }), 400, 'INVALID_INPUT');
    expect(stranger.details).toMatchObject({ errors: [{ field: 'inviterUma' }] });
    const past = expectEnvelope(
      await call(inviting, 'POST', '/invitations', { inviterUma: '$alice@a.example.com', expiresAt: new Date(ctx.clock.now().getTime() - 1000).toISOString() }),
      400,
      'INVALID_INPUT',
    );
    expect(past.details).toMatchObject({ errors: [{ field: 'expiresAt' }] });
    const many = expectEnvelope(await call(inviting, 'POST', '/invitations', { amountToSend: 0, extra: 1 }), 400, 'INVALID_INPUT');
    expect((many.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field).sort()).toEqual(['amountToSend', 'extra', 'inviterUma']);
    // Another platform's customer is not yours.
    expectEnvelope(await call(claiming, 'POST', '/invitations', { inviterUma: '$alice@a.example.com' }), 400, 'INVALID_INPUT');
    // The name shown to the invitee is text a person reads: not blank, no control characters.
    for (const firstName of ['   ', 'Al\u001b[31mice']) {
      const named = expectEnvelope(await call(inviting, 'POST', '/invitations', { inviterUma: '$alice@a.example.com', firstName }), 400, 'INVALID_INPUT');
      expect(named.details).toMatchObject({ errors: [{ field: 'firstName' }] });
    }
    const after = await ctx.handle.db.selectFrom('invitations').select((eb) => eb.fn.countAll<bigint>().as('n')).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
  });

  it('makes a new invitation on each call, unless retried with the same Idempotency-Key: then the first answer, and nothing more', async () => {
    const count = async () => Number((await ctx.handle.db.selectFrom('invitations').select((eb) => eb.fn.countAll<string | number>().as('n')).where('platform_id', '=', inviting.uuid).executeTakeFirstOrThrow()).n);
    const body = { inviterUma: '$alice@a.example.com', amountToSend: 300 };
    const start = await count();
    const keyed = (payload: object) => ctx.app.inject({ method: 'POST', url: `${BASE}/invitations`, headers: { authorization: inviting.auth, 'idempotency-key': 'invite-once' }, payload });
    const first = await keyed(body);
    expect(first.statusCode, first.body).toBe(201);
    const replay = await keyed(body);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toBe(first.body);
    expectEnvelope(await keyed({ ...body, amountToSend: 301 }), 409, 'CONFLICT');
    expect(await count()).toBe(start + 1);
    expect((await eventsOf((first.json() as Invitation).code)).map((e) => e.type)).toEqual(['INVITATION.CREATED']);
    // Without a key, a retry is another request: a second invitation.
    await invite(body);
    await invite(body);
    expect(await count()).toBe(start + 3);
  });

  it('refuses an expiresAt of this very instant: it must be in the future', async () => {
    const now = ctx.clock.now().toISOString();
    const refused = expectEnvelope(await call(inviting, 'POST', '/invitations', { inviterUma: '$alice@a.example.com', expiresAt: now }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ errors: [{ field: 'expiresAt' }] });
    const later = new Date(ctx.clock.now().getTime() + 1).toISOString();
    expect((await invite({ expiresAt: later })).expiresAt).toBe(later);
  });

  it('draws codes from all 32 letters of lower-case Crockford base32 (50 random bits)', async () => {
    const codes = await Promise.all(Array.from({ length: 12 }, async () => (await invite()).code));
    for (const code of codes) expect(code).toMatch(/^[0-9a-hjkmnp-tv-z]{10}$/);
    expect(new Set(codes).size).toBe(codes.length);
    // 120 letters drawn from 32: all but a handful appear (at most 16 is below one in 10^20).
    expect(new Set(codes.join('')).size).toBeGreaterThan(24);
  });

  it('needs the TRANSACT permission', async () => {
    const viewer = await ctx.newToken(inviting, ['VIEW']);
    expectEnvelope(await call(viewer, 'POST', '/invitations', { inviterUma: '$alice@a.example.com' }), 403, 'FORBIDDEN');
  });
});

describe('GET /invitations/{code}', () => {
  it('is 404 INVITATION_NOT_FOUND for an unknown or malformed code', async () => {
    expectEnvelope(await call(inviting, 'GET', '/invitations/0000000000'), 404, 'INVITATION_NOT_FOUND');
    expectEnvelope(await call(inviting, 'GET', '/invitations/NOT-A-CODE'), 404, 'INVITATION_NOT_FOUND');
    expectEnvelope(await call(inviting, 'POST', '/invitations/0000000000/claim', { inviteeUma: '$z@b.example.com' }), 404, 'INVITATION_NOT_FOUND');
    expectEnvelope(await call(inviting, 'POST', '/invitations/0000000000/cancel'), 404, 'INVITATION_NOT_FOUND');
    // Whatever the claimer's config: INVITATIONS_NOT_CONFIGURED is for an invitation that exists.
    const bare = await ctx.newPlatform();
    expectEnvelope(await call(bare, 'POST', '/invitations/0000000000/claim', { inviteeUma: '$z@b.example.com' }), 404, 'INVITATION_NOT_FOUND');
    expectEnvelope(await call(bare, 'POST', '/invitations/NOT-A-CODE/claim', { inviteeUma: '$z@b.example.com' }), 404, 'INVITATION_NOT_FOUND');
  });
});

describe('POST /invitations/{code}/claim', () => {
  it('claims once, notifies the inviting platform with INVITATION.CLAIMED in the same transaction, and refuses a second claim', async () => {
    const invitation = await invite({ amountToSend: 1000 });
    ctx.clock.advance(5000);
    const response = await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@b.example.com' });
    expect(response.statusCode, response.body).toBe(200);
    const claimed = response.json() as Invitation;
    expect(claimed).toEqual({ ...invitation, status: 'CLAIMED', inviteeUma: '$zoe@b.example.com', claimedAt: ctx.clock.now().toISOString() });
    expect((await call(inviting, 'GET', `/invitations/${invitation.code}`)).json()).toEqual(claimed);

    const events = await eventsOf(invitation.code);
    expect(events.map((e) => e.type)).toEqual(['INVITATION.CREATED', 'INVITATION.CLAIMED']);
    const event = events[1]!;
    expect(event.platform_id).toBe(inviting.uuid);
    expect(event.data).toEqual(claimed);
    expect(catalogue.has('INVITATION.CLAIMED')).toBe(true);
    expect(catalogue.validate('INVITATION.CLAIMED', event.data)).toEqual({ valid: true });

    const again = expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$yan@b.example.com' }), 400, 'INVITATION_ALREADY_CLAIMED');
    expect(again.message).toContain(invitation.code);
    expectEnvelope(await call(inviting, 'POST', `/invitations/${invitation.code}/cancel`), 400, 'INVITATION_ALREADY_CLAIMED');
    expect((await eventsOf(invitation.code)).length).toBe(2);
  });

  it('the same claim again (a retry after a lost answer) is 200 with the invitation as claimed, changing nothing; another address or platform is INVITATION_ALREADY_CLAIMED', async () => {
    const invitation = await invite({ amountToSend: 1000 });
    const first = await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@b.example.com' });
    expect(first.statusCode, first.body).toBe(200);
    const claimed = first.json() as Invitation;
    ctx.clock.advance(60_000);
    // Addresses compare case-insensitively everywhere: the answer keeps the spelling that won.
    for (const inviteeUma of ['$zoe@b.example.com', '$ZOE@B.example.com']) {
      const retried = await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma });
      expect(retried.statusCode, retried.body).toBe(200);
      expect(retried.json()).toEqual(claimed);
    }
    expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$yan@b.example.com' }), 400, 'INVITATION_ALREADY_CLAIMED');
    const other = await ctx.newPlatform();
    expect((await call(other, 'PATCH', '/config', { umaDomain: 'c.example.com' })).statusCode).toBe(200);
    expectEnvelope(await call(other, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@b.example.com' }), 400, 'INVITATION_ALREADY_CLAIMED');
    // A claim that won stays answered as one after the claimer cleared its UMA domain; another is still refused for the domain.
    expect((await call(claiming, 'PATCH', '/config', { umaDomain: null })).statusCode).toBe(200);
    try {
      expect((await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@b.example.com' })).json()).toEqual(claimed);
      expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$yan@b.example.com' }), 400, 'INVITATIONS_NOT_CONFIGURED');
    } finally {
      expect((await call(claiming, 'PATCH', '/config', { umaDomain: 'b.example.com' })).statusCode).toBe(200);
    }
    expect((await call(inviting, 'GET', `/invitations/${invitation.code}`)).json()).toEqual(claimed);
    expect((await eventsOf(invitation.code)).map((e) => e.type)).toEqual(['INVITATION.CREATED', 'INVITATION.CLAIMED']);
  });

  it('refuses a malformed invitee, the inviter itself, and a claimer without an UMA domain, changing nothing', async () => {
    const invitation = await invite();
    expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: 'zoe' }), 400, 'INVALID_UMA_ADDRESS');
    expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, {}), 400, 'INVALID_INPUT');
    expectEnvelope(await call(inviting, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$ALICE@a.example.com' }), 400, 'INVALID_INPUT');
    const bare = await ctx.newPlatform();
    expectEnvelope(await call(bare, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@c.example.com' }), 400, 'INVITATIONS_NOT_CONFIGURED');
    expect(((await call(inviting, 'GET', `/invitations/${invitation.code}`)).json() as Invitation).status).toBe('PENDING');
    expect((await eventsOf(invitation.code)).map((e) => e.type)).toEqual(['INVITATION.CREATED']);
  });

  it('an expired invitation reads EXPIRED and can be neither claimed nor cancelled', async () => {
    const expiresAt = new Date(ctx.clock.now().getTime() + 60_000).toISOString();
    const invitation = await invite({ expiresAt });
    expect(invitation.expiresAt).toBe(expiresAt);
    ctx.clock.advance(60_000);
    expect(((await call(inviting, 'GET', `/invitations/${invitation.code}`)).json() as Invitation).status).toBe('EXPIRED');
    const refused = expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@b.example.com' }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ status: 'EXPIRED', expiresAt });
    expectEnvelope(await call(inviting, 'POST', `/invitations/${invitation.code}/cancel`), 400, 'INVALID_INPUT');
  });
});

describe('POST /invitations/{code}/cancel', () => {
  it('cancels a pending invitation of its creator; then claims are INVITATION_CANCELLED', async () => {
    const invitation = await invite();
    expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/cancel`), 403, 'FORBIDDEN');
    const response = await call(inviting, 'POST', `/invitations/${invitation.code}/cancel`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ ...invitation, status: 'CANCELLED' });
    expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@b.example.com' }), 400, 'INVITATION_CANCELLED');
    expectEnvelope(await call(inviting, 'POST', `/invitations/${invitation.code}/cancel`), 400, 'INVITATION_CANCELLED');
    expect((await eventsOf(invitation.code)).map((e) => e.type)).toEqual(['INVITATION.CREATED', 'INVITATION.CANCELLED']);
  });
});

describe('an inviter deleted since', () => {
  it('makes its pending invitation read as CANCELLED, and neither claimable nor cancellable, though its address names another customer now', async () => {
    const created = await call(inviting, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `inv-${++seq}`, fullName: 'Dee Lee', umaAddress: '$dee@a.example.com' });
    expect(created.statusCode, created.body).toBe(201);
    const invitation = await invite({ inviterUma: '$dee@a.example.com', amountToSend: 700 });
    const deleted = await call(inviting, 'DELETE', `/customers/${(created.json() as { id: string }).id}`);
    expect(deleted.statusCode, deleted.body).toBe(200);
    // The freed address goes to someone else: a claim must not make the platform pay on their behalf.
    await customer(inviting, '$dee@a.example.com');

    expect((await call(claiming, 'GET', `/invitations/${invitation.code}`)).json()).toEqual({ ...invitation, status: 'CANCELLED' });
    const refused = expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@b.example.com' }), 400, 'INVITATION_CANCELLED');
    expect(refused.details).toEqual({ reason: 'INVITER_DELETED' });
    expectEnvelope(await call(inviting, 'POST', `/invitations/${invitation.code}/cancel`), 400, 'INVITATION_CANCELLED');
    expect((await eventsOf(invitation.code)).map((e) => e.type)).toEqual(['INVITATION.CREATED']);
    const stored = await ctx.handle.db.selectFrom('invitations').select(['status', 'invitee_uma']).where('code', '=', invitation.code).executeTakeFirstOrThrow();
    expect(stored).toEqual({ status: 'PENDING', invitee_uma: null });
  });

  it('reads as CANCELLED rather than EXPIRED once past its expiry too, and claim and cancel say so alike (INVITER_DELETED)', async () => {
    const created = await call(inviting, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `inv-${++seq}`, fullName: 'Eve Lee', umaAddress: '$eve@a.example.com' });
    expect(created.statusCode, created.body).toBe(201);
    const invitation = await invite({ inviterUma: '$eve@a.example.com', expiresAt: new Date(ctx.clock.now().getTime() + 60_000).toISOString() });
    expect((await call(inviting, 'DELETE', `/customers/${(created.json() as { id: string }).id}`)).statusCode).toBe(200);
    ctx.clock.advance(120_000);

    expect((await call(claiming, 'GET', `/invitations/${invitation.code}`)).json()).toEqual({ ...invitation, status: 'CANCELLED' });
    const claimed = expectEnvelope(await call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$zoe@b.example.com' }), 400, 'INVITATION_CANCELLED');
    expect(claimed.details).toEqual({ reason: 'INVITER_DELETED' });
    const cancelled = expectEnvelope(await call(inviting, 'POST', `/invitations/${invitation.code}/cancel`), 400, 'INVITATION_CANCELLED');
    expect(cancelled.details).toEqual({ reason: 'INVITER_DELETED' });
    expect((await eventsOf(invitation.code)).map((e) => e.type)).toEqual(['INVITATION.CREATED']);
  });
});

describe('sandbox and production', () => {
  it("never see each other's invitations: read, claim and cancel across them are 404, changing nothing", async () => {
    const production = await ctx.newPlatform('production');
    expect((await call(production, 'PATCH', '/config', { umaDomain: 'prod.example.com' })).statusCode).toBe(200);
    await customer(production, '$paula@prod.example.com');
    const fromSandbox = await invite({ amountToSend: 900 });
    const made = await call(production, 'POST', '/invitations', { inviterUma: '$paula@prod.example.com', amountToSend: 900 });
    expect(made.statusCode, made.body).toBe(201);
    const fromProduction = made.json() as Invitation;

    for (const [outsider, invitation] of [[production, fromSandbox], [claiming, fromProduction]] as const) {
      expectEnvelope(await call(outsider, 'GET', `/invitations/${invitation.code}`), 404, 'INVITATION_NOT_FOUND');
      expectEnvelope(await call(outsider, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$mallory@b.example.com' }), 404, 'INVITATION_NOT_FOUND');
      expectEnvelope(await call(outsider, 'POST', `/invitations/${invitation.code}/cancel`), 404, 'INVITATION_NOT_FOUND');
      expect((await eventsOf(invitation.code)).map((e) => e.type)).toEqual(['INVITATION.CREATED']);
    }
    // Without an UMA domain, too: the code is unknown there, not INVITATIONS_NOT_CONFIGURED.
    const bareProduction = await ctx.newPlatform('production');
    expectEnvelope(await call(bareProduction, 'POST', `/invitations/${fromSandbox.code}/claim`, { inviteeUma: '$mallory@b.example.com' }), 404, 'INVITATION_NOT_FOUND');
    // Claimed once it is refused elsewhere, the other environment still hears 404, not INVITATION_ALREADY_CLAIMED.
    expect((await call(claiming, 'POST', `/invitations/${fromSandbox.code}/claim`, { inviteeUma: '$zoe@b.example.com' })).statusCode).toBe(200);
    expectEnvelope(await call(production, 'POST', `/invitations/${fromSandbox.code}/claim`, { inviteeUma: '$mallory@b.example.com' }), 404, 'INVITATION_NOT_FOUND');
    expect(((await call(inviting, 'GET', `/invitations/${fromSandbox.code}`)).json() as Invitation).inviteeUma).toBe('$zoe@b.example.com');
    expect(((await call(production, 'GET', `/invitations/${fromProduction.code}`)).json() as Invitation).status).toBe('PENDING');
  });
});

describe('claims that race', () => {
  it('exactly one of many concurrent claims wins; the rest are INVITATION_ALREADY_CLAIMED and one event is recorded', async () => {
    const invitation = await invite();
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: `$racer${i}@b.example.com` })),
    );
    const winners = responses.filter((r) => r.statusCode === 200);
    expect(winners).toHaveLength(1);
    for (const loser of responses.filter((r) => r.statusCode !== 200)) expectEnvelope(loser, 400, 'INVITATION_ALREADY_CLAIMED');
    const stored = (await call(inviting, 'GET', `/invitations/${invitation.code}`)).json() as Invitation;
    expect(stored.inviteeUma).toBe((winners[0]!.json() as Invitation).inviteeUma);
    expect((await eventsOf(invitation.code)).filter((e) => e.type === 'INVITATION.CLAIMED')).toHaveLength(1);
  });

  it('copies of one claim racing each other all answer 200 with the same invitation, and one event is recorded', async () => {
    const invitation = await invite();
    const responses = await Promise.all(Array.from({ length: 4 }, () => call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$twin@b.example.com' })));
    for (const response of responses) expect(response.statusCode, response.body).toBe(200);
    expect(new Set(responses.map((r) => r.body)).size).toBe(1);
    expect(responses[0]!.json()).toMatchObject({ status: 'CLAIMED', inviteeUma: '$twin@b.example.com' });
    expect((await eventsOf(invitation.code)).filter((e) => e.type === 'INVITATION.CLAIMED')).toHaveLength(1);
  });

  it('a cancel racing claims: exactly one of them wins, the others are refused by what won, and only its event is recorded', async () => {
    const invitation = await invite();
    const responses = await Promise.all([
      call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$first@b.example.com' }),
      call(inviting, 'POST', `/invitations/${invitation.code}/cancel`),
      call(claiming, 'POST', `/invitations/${invitation.code}/claim`, { inviteeUma: '$second@b.example.com' }),
      call(inviting, 'POST', `/invitations/${invitation.code}/cancel`),
    ]);
    const winners = responses.filter((r) => r.statusCode === 200);
    expect(winners).toHaveLength(1);
    const won = winners[0]!.json() as Invitation;
    const stored = (await call(inviting, 'GET', `/invitations/${invitation.code}`)).json() as Invitation;
    expect(stored).toEqual(won);
    const refusedWith = won.status === 'CLAIMED' ? 'INVITATION_ALREADY_CLAIMED' : 'INVITATION_CANCELLED';
    for (const loser of responses.filter((r) => r.statusCode !== 200)) expectEnvelope(loser, 400, refusedWith);
    expect((await eventsOf(invitation.code)).map((e) => e.type)).toEqual(['INVITATION.CREATED', won.status === 'CLAIMED' ? 'INVITATION.CLAIMED' : 'INVITATION.CANCELLED']);
  });
});
