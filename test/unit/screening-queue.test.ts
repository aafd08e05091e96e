/**
 * The built-in screener's queue is bounded: in length (in all and per platform) and in waiting
 * time. An upload refused by it is 503 SERVICE_UNAVAILABLE and never screened; platforms take
 * turns. (The HTTP side: document-bombs.test.ts, "many uploads at once".)
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BuiltInScreener } from '../../src/modules/documents/screening/builtin.js';
import { GateRefusal, Semaphore } from '../../src/modules/documents/screening/gate.js';
import type { ScreeningSubject } from '../../src/modules/documents/screening/screener.js';
import { BoundedWorkerPool } from '../../src/platform/bounded-worker.js';
import { AppError } from '../../src/platform/errors.js';
import { validPdf } from '../helpers/document-files.js';

function holder() {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  return { held, release };
}

describe('the screening semaphore', () => {
  it('refuses a task when the queue or its key’s share is full, and one whose wait runs out', async () => {
    const gate = new Semaphore(1, { maxWaiting: 2, maxWaitingPerKey: 1, maxWaitMs: 50 });
    const running = holder();
    const first = gate.run(() => running.held, 'a');
    const ran: string[] = [];
    const waitingA = gate.run(async () => void ran.push('a'), 'a');
    await expect(gate.run(async () => void ran.push('a, second'), 'a')).rejects.toEqual(new GateRefusal('queueFull'));
    const waitingB = gate.run(async () => void ran.push('b'), 'b');
    await expect(gate.run(async () => void ran.push('c'), 'c')).rejects.toEqual(new GateRefusal('queueFull'));
    expect(gate.queued).toBe(2);

    await expect(waitingA).rejects.toEqual(new GateRefusal('waitedTooLong'));
    await expect(waitingB).rejects.toEqual(new GateRefusal('waitedTooLong'));
    expect(gate.queued).toBe(0);
    running.release();
    await first;
    expect(ran).toEqual([]);
    expect(gate.running).toBe(0);
    await expect(gate.run(async () => 'ok', 'a')).resolves.toBe('ok');
  });

  it('takes waiting keys in turn, each in arrival order', async () => {
    const gate = new Semaphore(1);
    const running = holder();
    const first = gate.run(() => running.held);
    const order: string[] = [];
    const tasks = ['a1', 'a2', 'a3', 'b1', 'b2', 'c1'].map((name) => gate.run(async () => void order.push(name), name[0]));
    running.release();
    await Promise.all([first, ...tasks]);
    expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });
});

describe('the built-in screener under load', () => {
  let dir: string;
  let subject: ScreeningSubject;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'screening-queue-'));
    const filePath = join(dir, 'statement.pdf');
    const bytes = await validPdf();
    await writeFile(filePath, bytes);
    subject = { filePath, contentType: 'application/pdf', sizeBytes: bytes.length, sha256: '', fileName: 'statement.pdf', documentType: 'BANK_STATEMENT', country: 'US', platformId: 'p1' };
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('refuses an upload whose turn does not come within maxWaitMs: 503 with Retry-After, never screened', async () => {
    const screener = new BuiltInScreener({ concurrency: 1, maxWaitMs: 100 });
    const parsing = holder();
    const parse = vi.spyOn(BoundedWorkerPool.prototype, 'run').mockImplementation(() => parsing.held.then(() => null));
    try {
      const hostile = screener.screen(subject);
      const started = performance.now();
      const refusal = await screener.screen({ ...subject, platformId: 'p2' }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(performance.now() - started).toBeLessThan(2000);
      expect(refusal).toBeInstanceOf(AppError);
      expect(refusal).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { reason: 'SCREENING_WAIT_EXPIRED' }, headers: { 'retry-after': '64' } }); // 64 waiting, one at a time
      expect((refusal as AppError).message).toMatch(/waited 0.1 s for screening.*try again later/);
      expect(parse).toHaveBeenCalledTimes(1);
      parsing.release();
      await expect(hostile).resolves.toEqual([]);
      expect(screener.gate.queued).toBe(0);
      expect(screener.gate.running).toBe(0);
    } finally {
      parsing.release();
      parse.mockRestore();
      await screener.close();
    }
  });
});
