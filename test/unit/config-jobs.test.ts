import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const base = { CORRIDOR_MASTER_KEY: '00'.repeat(32) };

describe('job lease and webhook timeout settings', () => {
  it('default to a 60 s lease and a 10 s webhook attempt', () => {
    const config = loadConfig(base);
    expect(config.jobs.leaseMs).toBe(60_000);
    expect(config.webhooks.timeoutMs).toBe(10_000);
  });

  it('take a shorter lease, the webhook attempt then defaulting to half of it', () => {
    const config = loadConfig({ ...base, CORRIDOR_JOBS_LEASE_MS: '4000' });
    expect(config.jobs.leaseMs).toBe(4_000);
    expect(config.webhooks.timeoutMs).toBe(2_000);
  });

  it('refuse a webhook attempt longer than half a lease, and a lease out of range, naming the setting', () => {
    expect(() => loadConfig({ ...base, CORRIDOR_JOBS_LEASE_MS: '10000', CORRIDOR_WEBHOOK_TIMEOUT_MS: '6000' })).toThrow(
      new ConfigError('CORRIDOR_WEBHOOK_TIMEOUT_MS (6000) must be at most half of CORRIDOR_JOBS_LEASE_MS (10000)'),
    );
    expect(() => loadConfig({ ...base, CORRIDOR_JOBS_LEASE_MS: '1999' })).toThrow(/CORRIDOR_JOBS_LEASE_MS must be between 2000 and 3600000/);
    expect(() => loadConfig({ ...base, CORRIDOR_JOBS_LEASE_MS: '1m' })).toThrow(/CORRIDOR_JOBS_LEASE_MS must be a whole number/);
  });
});
