import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

/** Values that pass a first look but that nothing downstream could use stop start-up here, naming the variable. */
describe('settings refused at start-up', () => {
  it.each([
    ['CORRIDOR_PUBLIC_URL', 'payments.example.com'],
    ['CORRIDOR_PUBLIC_URL', 'ftp://payments.example.com'],
    ['CORRIDOR_PUBLIC_URL', 'http://[::1'],
    ['CORRIDOR_RATES_URL', 'http://[bad'],
    ['CORRIDOR_TERMS_URL', 'https://exa mple.com'],
    ['DATABASE_URL', 'mysql://db/corridor'],
    ['DATABASE_URL', 'postgres://corridor:s3cret@db:notaport/corridor'],
    ['DATABASE_URL', 'postgres://corridor:s3cret@[db/corridor'],
    ['DATABASE_URL', 'postgres://corridor:s3cret@db/corridor?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem'],
    ['DATABASE_URL', 'postgres://corridor:s3cret@db/corridor?sslmode=bogus'],
    ['CORRIDOR_DATA_DIR', '/dev/null'],
    ['CORRIDOR_DATA_DIR', '/dev/null/data'],
    ['CORRIDOR_UPLOAD_DIR', '/nonexistent/uploads'],
    ['CORRIDOR_UPLOAD_DIR', '/dev/null'],
    // A connect timeout too short for any network, a silence shorter than a busy statement's pause.
    ['CORRIDOR_DB_CONNECT_TIMEOUT_MS', '99'],
    ['CORRIDOR_DB_CONNECT_TIMEOUT_MS', '5s'],
    ['CORRIDOR_DB_SILENCE_MS', '999'],
    ['CORRIDOR_DB_SILENCE_MS', '600001'],
    ['CORRIDOR_UMA_TRUSTED_ROOTS', 'not a certificate'],
    // Markers around nothing, or around text that is not DER: each UMA exchange would have failed on it.
    ['CORRIDOR_UMA_TRUSTED_ROOTS', '-----BEGIN CERTIFICATE----------END CERTIFICATE-----'],
    ['CORRIDOR_UMA_TRUSTED_ROOTS', '-----BEGIN CERTIFICATE-----\\nbm90IGEgY2VydGlmaWNhdGU=\\n-----END CERTIFICATE-----'],
    ['CORRIDOR_UMA_TRUSTED_ROOTS', '-----BEGIN CERTIFICATE-----\\nno end marker'],
  ])('%s=%s', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(new RegExp(`^${name} `));
  });

  it('never quotes a password back: DATABASE_URL is not repeated, a provider URL loses its credentials', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://corridor:s3cret@[db/corridor' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://corridor:s3cret@[db/corridor' })).not.toThrow(/s3cret/);
    expect(() => loadConfig({ CORRIDOR_RAILS_URL: 'https://rails:s3cret@[rails.example' })).toThrow(
      new ConfigError('CORRIDOR_RAILS_URL must be an http(s) URL, got "https://[credentials]@[rails.example"'),
    );
  });

  it('says what is wrong with a directory, a TLS file or a JWKS URL, rather than that a URL is malformed', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://corridor:s3cret@db/corridor?sslrootcert=/nonexistent/ca.pem' })).toThrow(
      new ConfigError("DATABASE_URL names sslrootcert=/nonexistent/ca.pem, which cannot be read (ENOENT)"),
    );
    expect(() => loadConfig({ DATABASE_URL: 'postgres://corridor:s3cret@db/corridor?sslmode=verify_full' })).toThrow(
      new ConfigError('DATABASE_URL sslmode must be one of disable, prefer, require, verify-ca, verify-full, no-verify, got "verify_full"'),
    );
    expect(loadConfig({ DATABASE_URL: 'postgres://db/corridor?sslmode=no-verify' }).databaseUrl).toBe('postgres://db/corridor?sslmode=no-verify');
    expect(() => loadConfig({ CORRIDOR_DATA_DIR: '/dev/null' })).toThrow(new ConfigError('CORRIDOR_DATA_DIR /dev/null is not a directory'));
    expect(() => loadConfig({ CORRIDOR_DATA_DIR: '/dev/null/data' })).toThrow(new ConfigError('CORRIDOR_DATA_DIR /dev/null/data is not a directory: a file is on its path'));
    expect(() => loadConfig({ CORRIDOR_UPLOAD_DIR: '/nonexistent/uploads' })).toThrow(new ConfigError('CORRIDOR_UPLOAD_DIR /nonexistent/uploads does not exist'));
    expect(() => loadConfig({ CORRIDOR_OIDC_JWKS_OVERRIDES: '{"https://accounts.google.com": "ftp://mirror.example/jwks.json"}' })).toThrow(
      new ConfigError('CORRIDOR_OIDC_JWKS_OVERRIDES: the JWKS URL of https://accounts.google.com is not an http(s) URL'),
    );
    // Only the embedded database lives in CORRIDOR_DATA_DIR, and a new one is made there.
    expect(loadConfig({ DATABASE_URL: 'postgres://db/corridor', CORRIDOR_DATA_DIR: '/dev/null' }).dataDir).toBe('/dev/null');
    expect(loadConfig({ CORRIDOR_DATA_DIR: '/nonexistent/data' }).dataDir).toBe('/nonexistent/data');
    expect(loadConfig({ CORRIDOR_OIDC_JWKS_OVERRIDES: '{"https://accounts.google.com": "http://127.0.0.1:9000/jwks"}' }).wallet.oidcJwksOverrides).toEqual({
      'https://accounts.google.com': 'http://127.0.0.1:9000/jwks',
    });
  });

  it('accepts what pg accepts, a Unix socket among them, and a public URL with a path', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://corridor@/corridor?host=/var/run/postgresql' }).databaseUrl).toBe('postgres://corridor@/corridor?host=/var/run/postgresql');
    expect(loadConfig({ DATABASE_URL: 'postgresql://corridor:p%40ss@db:5432/corridor' }).databaseUrl).toBe('postgresql://corridor:p%40ss@db:5432/corridor');
    expect(loadConfig({ CORRIDOR_PUBLIC_URL: 'https://api.example.com/corridor/' }).publicUrl).toBe('https://api.example.com/corridor');
  });
});
