import { pino, type Logger } from 'pino';

/** JSON logs; anything that looks like a credential is redacted even if a caller logs it. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'corridor' },
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        '*.clientSecret',
        '*.secret',
        '*.password',
        '*.otp',
        '*.encryptedOtpBundle',
        '*["service-wallet-signature"]',
      ],
      censor: '[redacted]',
    },
  });
}
