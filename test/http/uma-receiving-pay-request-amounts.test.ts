import { describe, expect, it } from 'vitest';
import { expectEnvelope } from '../helpers/context.js';
import { receivingWorld } from '../helpers/uma-receiving.js';

/**
 * The amount of a pay request another VASP sends (UMA 1.x: `"<n>.<receiving currency>"`, or a
 * bare number of msats) is not covered by its signature, and the SDK reads it loosely: a negative
 * or zero amount, one past what a JSON number carries, or one in a third currency parse. None of
 * them may be invoiced, nor read as an amount of the receiving currency: each is refused before
 * anything is opened for the receiver.
 */
const domain = 'amounts.receiver.test';
const { world, newReceiver, postPayRequest } = receivingWorld(domain);
const payRequestWithAmount = (receiver: { umaAddress: string }, amount: unknown) => postPayRequest(receiver, { amount });


describe('a pay request’s amount that no receiver takes', () => {
  it('negative, zero, past 2^53, or in another currency than the receiving one: refused, nothing opened, the platform not asked', async () => {
    const receiver = await newReceiver('amounts');
    const incoming = async () => (await world.b.handle.db.selectFrom('transactions').select('id').where('type', '=', 'INCOMING').execute()).length;
    const before = await incoming();
    const cases: Array<[unknown, string]> = [
      ['-5.MXN', 'AMOUNT_OUT_OF_RANGE'],
      ['0.MXN', 'AMOUNT_OUT_OF_RANGE'],
      ['99999999999999999999.MXN', 'AMOUNT_OUT_OF_RANGE'],
      [-3, 'AMOUNT_OUT_OF_RANGE'],
      [0, 'AMOUNT_OUT_OF_RANGE'],
      // 50,000 US cents is no 50,000 centavos; nor is "50000.5" 50,000 of anything the receiver takes.
      ['50000.USD', 'INVALID_CURRENCY'],
      ['50000.5', 'INVALID_CURRENCY'],
    ];
    for (const [amount, code] of cases) expectEnvelope(await payRequestWithAmount(receiver, amount), 400, code);
    expect(await incoming()).toBe(before);
    expect(world.hooks.of('INCOMING_PAYMENT.PENDING').filter((w) => (w.body.data?.destination as { umaAddress?: string } | undefined)?.umaAddress === receiver.umaAddress)).toEqual([]);
    // The same receiver, asked properly, is invoiced.
    const answered = await postPayRequest(receiver);
    expect(answered.statusCode, answered.body).toBe(200);
  });
});
