import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCsv } from '../../src/modules/customers/csv.js';
import { checkImportFile } from '../../src/modules/customers/import.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

function multipart(content: string) {
  const boundary = '----corridor-import-parsing';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="customers.csv"\r\nContent-Type: text/csv\r\n\r\n`;
  return {
    payload: Buffer.concat([Buffer.from(head), Buffer.from(content), Buffer.from(`\r\n--${boundary}--\r\n`)]),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

const upload = (p: TestPlatform, content: string) => {
  const { payload, headers } = multipart(content);
  return ctx.app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: p.auth, ...headers }, payload });
};

/** The most records `readCsv` hands out without the event loop getting a turn (a setImmediate chain counts the turns). */
async function mostRecordsPerTurn(text: string): Promise<{ records: number; most: number }> {
  let turns = 0;
  let running = true;
  void (async () => {
    while (running) {
      await nextTurn();
      turns++;
    }
  })();
  let records = 0;
  let most = 0;
  let sinceTurn = 0;
  let lastTurn = turns;
  for await (const _record of readCsv(text)) {
    records++;
    if (turns !== lastTurn) {
      lastTurn = turns;
      sinceTurn = 0;
    }
    most = Math.max(most, ++sinceTurn);
  }
  running = false;
  return { records, most };
}

describe('reading an import file', () => {
  it('gives the event loop a turn every few hundred records, however short or long they are', async () => {
    // Was: the whole file in one turn (100,001 records; a 10 MB file held the loop ~0.7 s).
    const short = await mostRecordsPerTurn(`customerType\n${'INDIVIDUAL\n'.repeat(100_000)}`);
    expect(short.records).toBe(100_001);
    expect(short.most).toBeLessThanOrEqual(1_000);
    const long = await mostRecordsPerTurn(`customerType,fullName\n${Array.from({ length: 20_000 }, (_, i) => `INDIVIDUAL,${'x'.repeat(400)}${i}\n`).join('')}`);
    expect(long.records).toBe(20_001);
    expect(long.most).toBeLessThanOrEqual(1_000);
  }, 60_000);

  it('refuses a 10 MB record of empty cells without building it (was ~350 MB of heap and 2 to 6 s of CPU)', async () => {
    const commas = ','.repeat(10 * 1024 * 1024 - 100);
    // The yardstick, timed under the same load: reading a well-formed 2 MB file.
    const ordinary = `customerType,fullName\n${'INDIVIDUAL,Ordinary Person\n'.repeat(2 * 1024 * 1024 / 27)}`;
    let started = performance.now();
    await checkImportFile(ordinary);
    const yardstick = performance.now() - started;
    for (const [text, message] of [
      [`customerType,fullName\r\nINDIVIDUAL,${commas}\r\n`, `has a record of ${commas.length + 2} cells at line 2; at most 100 are read`],
      [`\uFEFFcustomerType${commas}\r\nINDIVIDUAL\r\n`, `has ${commas.length + 1} columns; at most 100 are read`],
    ] as const) {
      started = performance.now();
      await expect(checkImportFile(text)).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { errors: [{ field: 'file', message }] } });
      // Was some 15 times the yardstick: the cells were built before they were counted.
      expect(performance.now() - started).toBeLessThan(3 * yardstick);
    }
    const p = await ctx.newPlatform();
    const body = expectEnvelope(await upload(p, `customerType,fullName\r\nINDIVIDUAL,${commas}\r\n`), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: `has a record of ${commas.length + 2} cells at line 2; at most 100 are read` }]);
    expect(await ctx.jobs.runDue()).toBe(0);
  }, 60_000);

  it('counts cells as csv-parse does: commas and newlines inside quotes are text, and a breach names the line the record starts on', async () => {
    const p = await ctx.newPlatform();
    // 150 commas inside one quoted cell, spread over lines: two cells, not 151.
    const quoted = `"${'a,\n'.repeat(150)}"`;
    const accepted = await upload(p, `customerType,fullName\r\nINDIVIDUAL,${quoted}\r\n`);
    expect(accepted.statusCode, accepted.body).toBe(202);
    // A record past the cap after a multi-line quoted cell: its line is where it starts.
    const body = expectEnvelope(await upload(p, `customerType,fullName\nINDIVIDUAL,${quoted}\n\nINDIVIDUAL${','.repeat(120)}\n`), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'has a record of 121 cells at line 154; at most 100 are read' }]);
    await ctx.handle.db.deleteFrom('jobs').where('platform_id', '=', p.uuid).execute();
  });
});
