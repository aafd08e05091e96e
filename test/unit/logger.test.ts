import { execFileSync } from 'node:child_process';
import { readSync } from 'node:fs';
import { setTimeout } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { withChildOnFifo } from '../helpers/child-on-fifo.js';

const root = new URL('../../', import.meta.url).pathname;

function childCode(body: string): string {
  return `import { createLogger } from './src/logger.ts'; const logger = createLogger('info'); ${body}`;
}

/** Runs `body` in a child process with `logger` from src/logger.ts; answers what it wrote to stdout. */
function childOutput(body: string): string[] {
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', childCode(body)], { cwd: root, encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

/**
 * Like childOutput, but stdout is a full non-blocking pipe when the child logs and ends: a FIFO
 * that the child fills with newlines until EAGAIN, saying so on stderr, and that this side starts
 * reading only a moment later. Whatever the logger still holds at exit meets a pipe that cannot
 * take it yet.
 */
async function childOutputThroughFullPipe(body: string): Promise<string[]> {
  const fill = `import { writeSync } from 'node:fs'; process.stdout; try { for (;;) writeSync(1, '\\n'); } catch (error) { if (error.code !== 'EAGAIN') throw error; } process.stderr.write('full\\n');`;
  return withChildOnFifo(`${fill} ${childCode(body)}`, async ({ reader, stderrWhen, exited }) => {
    await stderrWhen((stderr) => stderr.includes('full\n'));
    await setTimeout(300);
    const chunks: Buffer[] = [];
    const buffer = Buffer.alloc(65_536);
    for (;;) {
      try {
        const read = readSync(reader, buffer);
        if (read === 0) break; // every writer has closed: the child has ended
        chunks.push(Buffer.from(buffer.subarray(0, read)));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        await setTimeout(10);
      }
    }
    const { code, stderr } = await exited;
    expect(code, stderr).toBe(0);
    return Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean);
  });
}

function indexes(lines: string[]): number[] {
  return lines.map((line) => (JSON.parse(line) as { i: number }).i);
}

describe('request log lines, written in batches', () => {
  it('every line reaches the output, in order, whether the process exits at once or after a flush', () => {
    for (const ending of ['process.exit(0);', 'logger.flush(() => process.exit(0));', '']) {
      for (const count of [1, 150, 2_000]) {
        const lines = childOutput(`for (let i = 0; i < ${count}; i++) logger.info({ i, text: 'é'.repeat(i % 50) }, 'request'); ${ending}`);
        expect(lines.length, `${count} lines, ending ${ending || 'naturally'}`).toBe(count);
        expect(indexes(lines)).toEqual(Array.from({ length: count }, (_, i) => i));
      }
    }
  });

  it('the lines still held at exit reach a reader that is slow to take them', async () => {
    // 100 lines of 200 two-byte characters: under one batch in characters, over it in bytes, so
    // none is handed over before exit and what is left is more than the destination's own minimum.
    for (const ending of ['process.exit(0);', '']) {
      const lines = await childOutputThroughFullPipe(`for (let i = 0; i < 100; i++) logger.info({ i, text: 'é'.repeat(200) }, 'request'); ${ending}`);
      expect(indexes(lines), `ending ${ending || 'naturally'}`).toEqual(Array.from({ length: 100 }, (_, i) => i));
    }
  });
});

describe('redaction', () => {
  it('censors every credential header and secret field a line might carry, and keeps the rest', () => {
    const lines: string[] = [];
    const logger = createLogger('info', (line) => lines.push(line));
    const secrets = {
      authorization: 'Basic c2VjcmV0LWJhc2ljLWNyZWRlbnRpYWxz',
      walletSignature: 'eyJwdWJsaWNLZXkiOiJ3YWxsZXQtc3RhbXAifQ',
      gridWalletSignature: 'eyJncmlkLXdhbGxldC1zdGFtcCI6MX0',
      cookie: 'session=cookie-secret',
      webhookSignature: 'MEUCIQD-webhook-signature',
      clientSecret: 'client-secret-0123456789abcdef',
      otp: '493817',
      encryptedOtpBundle: 'otp-bundle-ciphertext',
      sessionKey: 'encrypted-session-signing-key',
      privateKey: 'private-key-pem',
      mnemonic: 'abandon ability able about',
      accountNumber: '000123456789',
      iban: 'DE89370400440532013000',
      taxId: '123-45-6789',
      body: 'request-body-with-everything',
    };
    const headers = {
      authorization: secrets.authorization,
      'service-wallet-signature': secrets.walletSignature,
      'grid-wallet-signature': secrets.gridWalletSignature,
      cookie: secrets.cookie,
      'x-service-signature': secrets.webhookSignature,
      'x-grid-signature': secrets.webhookSignature,
      'content-type': 'application/json',
    };
    logger.info({ req: { method: 'POST', headers, body: { note: secrets.body } } }, 'incoming');
    logger.info({ headers }, 'outgoing');
    logger.info(
      {
        clientSecret: secrets.clientSecret,
        secret: secrets.clientSecret,
        otp: secrets.otp,
        otpCode: secrets.otp,
        encryptedOtpBundle: secrets.encryptedOtpBundle,
        otpEncryptionTargetBundle: secrets.encryptedOtpBundle,
        encryptedSessionSigningKey: secrets.sessionKey,
        sessionSigningKey: secrets.sessionKey,
        privateKey: secrets.privateKey,
        mnemonic: secrets.mnemonic,
        accountNumber: secrets.accountNumber,
        iban: secrets.iban,
        taxId: secrets.taxId,
        body: { note: secrets.body },
        platformId: 'platform-kept',
      },
      'fields',
    );
    const text = lines.join('');
    for (const [name, value] of Object.entries(secrets)) expect(text, name).not.toContain(value);
    const [incoming, outgoing, fields] = lines.map((line) => JSON.parse(line) as Record<string, Record<string, unknown>>);
    expect(incoming!.req).toEqual({
      method: 'POST',
      headers: {
        authorization: '[redacted]',
        'service-wallet-signature': '[redacted]',
        'grid-wallet-signature': '[redacted]',
        cookie: '[redacted]',
        'x-service-signature': '[redacted]',
        'x-grid-signature': '[redacted]',
        'content-type': 'application/json',
      },
      body: '[redacted]',
    });
    expect(outgoing!.headers!['content-type']).toBe('application/json');
    expect(fields!.platformId).toBe('platform-kept');
  });
});
