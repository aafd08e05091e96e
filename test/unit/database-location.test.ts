import { describe, expect, it } from 'vitest';
import { postgresLocation } from '../../src/platform/db/database.js';

/** The location a server logs at start-up: every connection string pg accepts, never its credentials. */
describe('postgresLocation', () => {
  it('names host, port and database of a TCP connection string, without user or password', () => {
    expect(postgresLocation('postgres://app:s3cret@db.example.com:6432/corridor?sslmode=verify-full')).toBe('PostgreSQL corridor on db.example.com:6432');
    expect(postgresLocation('postgresql://app@127.0.0.1/corridor')).toBe('PostgreSQL corridor on 127.0.0.1:5432');
  });

  it('accepts a Unix socket directory, which a WHATWG URL refuses (user@ with an empty host)', () => {
    expect(() => new URL('postgres://postgres@/corridor?host=/var/run/postgresql')).toThrow();
    expect(postgresLocation('postgres://postgres@/corridor?host=/var/run/postgresql')).toBe('PostgreSQL corridor on socket /var/run/postgresql');
    expect(postgresLocation('postgres://postgres:pw@%2Fvar%2Frun%2Fpostgresql/corridor')).toBe('PostgreSQL corridor on socket /var/run/postgresql');
  });
});
