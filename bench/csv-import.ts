import type { Call } from './wallet.js';

const READERS = 8;
/** Each reader waits this long between reads: about 200 reads/s in all, a steady API load rather than a saturating one. */
const READ_INTERVAL_MS = 40;

/** A realistic import file: individuals with the fields a KYC'd customer has, unique per run. */
function importFile(rows: number): string {
  const run = Date.now().toString(36);
  const lines = ['platformCustomerId,customerType,fullName,email,birthDate,nationality,addressLine1,city,state,postalCode,country'];
  for (let i = 0; i < rows; i++) {
    lines.push(`bench-${run}-${i},INDIVIDUAL,Person ${i} Bench,person${i}.${run}@example.com,1985-04-12,US,${i} Market Street,San Francisco,CA,94105,US`);
  }
  return `${lines.join('\n')}\n`;
}

const percentile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

/**
 * Uploads a file of `rows` customers and waits for the job to finish while READERS paced loops
 * read one customer: the import's rows/s, and what it costs the API meanwhile (read latency).
 */
export async function csvImport(call: Call, rows: number) {
  const reader = await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Bench Reader' });
  const readPath = `/customers/${String(reader.body.id)}`;
  const form = new FormData();
  form.append('file', new Blob([importFile(rows)], { type: 'text/csv' }), 'customers.csv');
  const started = performance.now();
  const accepted = await call('POST', '/customers/bulk/csv', form);
  if (accepted.status !== 202) throw new Error(`upload answered ${accepted.status}: ${JSON.stringify(accepted.body)}`);
  const jobPath = `/customers/bulk/jobs/${String(accepted.body.jobId)}`;

  let done = false;
  let job: Record<string, unknown> = {};
  const latencies: number[] = [];
  let errors = 0;
  const readers = Array.from({ length: READERS }, async () => {
    while (!done) {
      const t = performance.now();
      const { status } = await call('GET', readPath);
      latencies.push(performance.now() - t);
      if (status !== 200) errors++;
      await new Promise((r) => setTimeout(r, READ_INTERVAL_MS));
    }
  });
  while (!done) {
    await new Promise((r) => setTimeout(r, 200));
    job = (await call('GET', jobPath)).body;
    done = job.status === 'COMPLETED' || job.status === 'FAILED';
  }
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(readers);
  latencies.sort((a, b) => a - b);
  const progress = job.progress as { successful: number; failed: number };
  return {
    rps: rows / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    errors: errors + progress.failed,
    note:
      `CSV import: ${rows} rows in ${seconds.toFixed(1)} s (${(rows / seconds).toFixed(0)} rows/s, job ${String(job.status)}, ` +
      `${progress.successful} created, ${progress.failed} failed); meanwhile ${latencies.length} GET /customers/{id} from ${READERS} loops: ` +
      `p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms`,
  };
}
