import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { LOG_BUFFER_BYTES } from '../../src/logger.js';
import { withChildOnFifo } from '../helpers/child-on-fifo.js';

/** What the child says on stderr once it has logged: before anything reads its stdout. */
interface Report {
  logged: number;
  dropped: number;
  metric: string;
}

/**
 * A child that logs four times the cap, in one turn of its event loop, to a stdout pipe that
 * nobody reads yet (its first write fills the pipe, the next meets EAGAIN and waits for its retry
 * timer), then scrapes /metrics (ops.ts on a bare Fastify) and reports on stderr. It touches
 * process.stdout first, which makes the pipe non-blocking, as tsx does anyway and as the server
 * does when it prints its first-run banner.
 */
const childCode = `
  import Fastify from 'fastify';
  import { createLogger, droppedLogLines, LOG_BUFFER_BYTES } from './src/logger.ts';
  import { HttpMetrics } from './src/platform/http/metrics.ts';
  import { registerOpsRoutes } from './src/platform/http/ops.ts';
  import { kyselyOn } from './test/helpers/recording-db.ts';
  process.stdout;
  const logger = createLogger('info');
  const text = 'x'.repeat(200);
  const logged = Math.ceil((4 * LOG_BUFFER_BYTES) / 280);
  for (let i = 0; i < logged; i++) logger.info({ i, text }, 'request');
  logger.flush();
  const dropped = droppedLogLines();
  const app = Fastify();
  const metrics = new HttpMetrics();
  registerOpsRoutes(app, { db: kyselyOn(async () => ({ rows: [] }), 'no jobs'), metrics });
  const body = (await app.inject({ url: '/metrics' })).body;
  const metric = body.split('\\n').find((line) => line.startsWith('corridor_log_lines_dropped_total '));
  process.stderr.write(JSON.stringify({ logged, dropped, metric }) + '\\n');
`;

/** Runs the child with its stdout on a FIFO that is read only once the child has reported; answers the report and every line read. */
async function runStalled(): Promise<{ report: Report; lines: string[] }> {
  return withChildOnFifo(childCode, async ({ reader, stderrWhen, exited }, readerTaken) => {
    const reported = await stderrWhen((stderr) => stderr.includes('\n'));
    const report = JSON.parse(reported.slice(0, reported.indexOf('\n'))) as Report;
    // Read as the data comes (epoll), so the child's writes seldom meet a full pipe and wait out sonic-boom's 100 ms EAGAIN retry.
    const output = new Socket({ fd: reader, readable: true, writable: false });
    readerTaken(); // the socket closes it
    const chunks: Buffer[] = [];
    output.on('data', (chunk: Buffer) => chunks.push(chunk));
    await new Promise<void>((resolve, reject) => {
      output.on('end', resolve);
      output.on('error', reject);
    });
    const { code, stderr } = await exited;
    expect(code, stderr).toBe(0);
    return { report, lines: Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean) };
  });
}

describe('standard output that does not take the log', () => {
  it('holds at most LOG_BUFFER_BYTES, counts the lines it drops and says so once the reader catches up', async () => {
    const { report, lines } = await runStalled();
    const requests = lines.filter((line) => line.includes('"msg":"request"'));
    const summaries = lines.filter((line) => !line.includes('"msg":"request"')).map((line) => JSON.parse(line) as { level: number; droppedLines: number; bufferBytes: number });

    // Held: what reached the reader is what was accepted while it stalled, under the cap, not the four times the cap logged.
    const heldBytes = requests.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
    expect(heldBytes).toBeLessThanOrEqual(LOG_BUFFER_BYTES);
    expect(heldBytes).toBeGreaterThan(LOG_BUFFER_BYTES / 2);

    // Dropped: every line logged either reached the reader or is counted, and /metrics shows the count.
    expect(report.dropped).toBeGreaterThan(0);
    expect(requests.length + report.dropped).toBe(report.logged);
    expect(report.metric).toBe(`corridor_log_lines_dropped_total ${report.dropped}`);
    const indexes = requests.map((line) => (JSON.parse(line) as { i: number }).i);
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));

    // Told: one warning, after the lines that were written, with the count.
    expect(summaries).toEqual([expect.objectContaining({ level: 40, droppedLines: report.dropped, bufferBytes: LOG_BUFFER_BYTES })]);
    expect(lines.at(-1)).toContain('"droppedLines"');
  });
});
