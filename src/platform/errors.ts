import { CURRENCY_CODE_FORMAT } from './currencies.js';

/**
 * The closed registry of error codes: every code Corridor can answer, with the HTTP status it
 * always travels with. Spec §7 first, then the upstream codes (UPSTREAM-FACTS §4.1) we use.
 * Services raise `AppError(code)`; only the HTTP layer turns the code into a status.
 */
export const ERROR_CODES = {
  // 400 — spec §7.1
  INVALID_INPUT: 400,
  END_USER_TERMS_VERSION_NOT_FOUND: 400,
  MISSING_MANDATORY_USER_INFO: 400,
  INVITATION_ALREADY_CLAIMED: 400,
  INVITATIONS_NOT_CONFIGURED: 400,
  INVALID_UMA_ADDRESS: 400,
  INVITATION_CANCELLED: 400,
  QUOTE_REQUEST_FAILED: 400,
  INVALID_PAYREQ_RESPONSE: 400,
  INVALID_RECEIVER: 400,
  PARSE_PAYREQ_RESPONSE_ERROR: 400,
  CERT_CHAIN_INVALID: 400,
  CERT_CHAIN_EXPIRED: 400,
  INVALID_PUBKEY_FORMAT: 400,
  MISSING_REQUIRED_UMA_PARAMETERS: 400,
  SENDER_NOT_ACCEPTED: 400,
  AMOUNT_OUT_OF_RANGE: 400,
  INVALID_CURRENCY: 400,
  INVALID_TIMESTAMP: 400,
  INVALID_NONCE: 400,
  INVALID_REQUEST_FORMAT: 400,
  INVALID_BANK_ACCOUNT: 400,
  SELF_PAYMENT: 400,
  LOOKUP_REQUEST_FAILED: 400,
  PARSE_LNURLP_RESPONSE_ERROR: 400,
  INVALID_AMOUNT: 400,
  WEBHOOK_ENDPOINT_NOT_SET: 400,
  WEBHOOK_DELIVERY_ERROR: 400,
  LOW_QUALITY: 400,
  DATA_MISMATCH: 400,
  EXPIRED: 400,
  SUSPECTED_FRAUD: 400,
  UNSUITABLE_DOCUMENT: 400,
  INCOMPLETE: 400,
  EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS: 400,
  SMS_OTP_CREDENTIAL_ALREADY_EXISTS: 400,
  PASSKEY_CREDENTIAL_ALREADY_EXISTS: 400,
  STABLECOIN_PROVIDER_ACCOUNT_INVALID: 400,
  STABLECOIN_PROVIDER_ACCOUNT_REVOKED: 400,
  STABLECOIN_PROVIDER_ACCOUNT_SELECTION_REQUIRED: 400,
  CARDHOLDER_KYC_NOT_APPROVED: 400,
  TRANSACTION_SIZE_LIMIT_EXCEEDED: 400,
  EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED: 400,
  // 401 — spec §7.2
  UNAUTHORIZED: 401,
  INVALID_SIGNATURE: 401,
  WALLET_SIGNATURE_MISSING: 401,
  WALLET_SIGNATURE_MALFORMED: 401,
  WALLET_SIGNATURE_BODY_MISMATCH: 401,
  WALLET_SIGNATURE_INVALID: 401,
  REQUEST_ID_MISSING: 401,
  // 403 — upstream (spec leaves END_USER_TERMS_NOT_ACCEPTED's status open; upstream pins 403)
  FORBIDDEN: 403,
  USER_NOT_READY: 403,
  COUNTERPARTY_NOT_ALLOWED: 403,
  VELOCITY_LIMIT_EXCEEDED: 403,
  END_USER_TERMS_NOT_ACCEPTED: 403,
  // 404 — spec §7.3
  TRANSACTION_NOT_FOUND: 404,
  INVITATION_NOT_FOUND: 404,
  USER_NOT_FOUND: 404,
  QUOTE_NOT_FOUND: 404,
  LOOKUP_REQUEST_NOT_FOUND: 404,
  TOKEN_NOT_FOUND: 404,
  BULK_UPLOAD_JOB_NOT_FOUND: 404,
  REFERENCE_NOT_FOUND: 404,
  UMA_NOT_FOUND: 404,
  STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND: 404,
  // 405 — upstream
  METHOD_NOT_ALLOWED: 405,
  // 408, 414, 431 — the HTTP layer's own refusals (issue 12 A4: every response is an envelope, and
  // its status equals the HTTP status, so each needs a code; the names are the RFC 9110/6585 reasons)
  REQUEST_TIMEOUT: 408,
  URI_TOO_LONG: 414,
  REQUEST_HEADER_FIELDS_TOO_LARGE: 431,
  // 409 — spec §7.6 and upstream
  SCA_SESSION_REQUIRED: 409,
  TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL: 409,
  TRANSACTION_NOT_CANCELLABLE: 409,
  UMA_ADDRESS_EXISTS: 409,
  EMAIL_OTP_EMAIL_ALREADY_EXISTS: 409,
  EMAIL_OTP_CREDENTIAL_SET_CHANGED: 409,
  INVALID_STATE_TRANSITION: 409,
  CONFLICT: 409,
  // 410
  CUSTOMER_DELETED: 410,
  // 422 — spec §7.4
  DOCUMENT_REJECTED: 422,
  // 423, 424, 429 — spec §7.6 and upstream
  ACCOUNT_LOCKED: 423,
  EMAIL_OTP_CREDENTIAL_SYNC_FAILED: 424,
  RATE_LIMITED: 429,
  DAILY_VOLUME_LIMIT_EXCEEDED: 429,
  // 500 — spec §7.5
  SERVICE_SWITCH_ERROR: 500,
  INTERNAL_ERROR: 500,
  // 501, 503 — upstream
  NOT_IMPLEMENTED: 501,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export function statusOf(code: ErrorCode): number {
  return ERROR_CODES[code];
}

/** Every code of one HTTP status, in registry order; feeds the OpenAPI error schemas. */
export function codesWithStatus(status: number): ErrorCode[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((c) => ERROR_CODES[c] === status);
}

/**
 * Codes a retry of the same request can fix even though their status alone says otherwise
 * (spec §7.1 calls QUOTE_REQUEST_FAILED retryable). Every 429 and 503 is retryable too; an
 * instance can say so for itself (`AppError` option `retryable`, e.g. a 409 for a request still
 * in progress).
 */
const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set(['QUOTE_REQUEST_FAILED', 'REQUEST_TIMEOUT']);

/**
 * The `x-should-retry` hint of an error response: true for 429 and 503 and for retryable codes,
 * false for every other 4xx and 501 (a retry cannot fix them), undefined for 500 (unexpected;
 * the client's own policy decides).
 */
export function shouldRetry(status: number, code: string | undefined, retryable?: boolean): boolean | undefined {
  if (retryable !== undefined) return retryable;
  if (status === 429 || status === 503) return true;
  if (code !== undefined && RETRYABLE_CODES.has(code as ErrorCode)) return true;
  if (status === 500) return undefined;
  return status >= 400 ? false : undefined;
}

export const ERROR_STATUSES: number[] = [...new Set(Object.values(ERROR_CODES))].sort((a, b) => a - b);

export interface FieldConstraint {
  format?: string;
  pattern?: string;
  enum?: string[];
  minLength?: number;
  maxLength?: number;
}

export interface FieldError {
  field: string;
  constraint?: FieldConstraint;
  message?: string;
}

/** An error a caller can act on. `extra` lands at the envelope's top level (e.g. precheckErrors). */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  readonly extra?: Record<string, unknown>;
  readonly headers?: Record<string, string>;
  /** Overrides what the code's status says about retrying (see `shouldRetry`). */
  readonly retryable?: boolean;
  /**
   * How the error handler tells the operator: by default a 5xx at error level and nothing
   * otherwise. `warn` for a refusal the service chose (backpressure), `none` where the code that
   * refused has logged it already with what the operator needs or the answer is a state, not a
   * failure (a readiness probe during start-up).
   */
  readonly log?: 'warn' | 'none';

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; extra?: Record<string, unknown>; headers?: Record<string, string>; retryable?: boolean; log?: 'warn' | 'none' } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = options.details;
    this.extra = options.extra;
    this.headers = options.headers;
    this.retryable = options.retryable;
    this.log = options.log;
  }

  get status(): number {
    return statusOf(this.code);
  }
}

/**
 * 400 naming each bad field: INVALID_CURRENCY when every bad field is a well-formed currency
 * code the registry does not know (spec §7.1; its own message), else INVALID_INPUT with `message`.
 */
export function invalidInput(errors: FieldError[], message?: string): AppError {
  const currencyOnly = errors.length > 0 && errors.every((e) => e.constraint?.format === CURRENCY_CODE_FORMAT && e.constraint.pattern === undefined);
  if (currencyOnly) {
    const fields = errors.map((e) => e.field).join(', ');
    return new AppError('INVALID_CURRENCY', `Unknown currency code in ${fields}; see the currencies Corridor supports in docs/conventions.md.`, { details: { errors } });
  }
  return new AppError('INVALID_INPUT', message ?? 'The request has invalid fields.', { details: { errors } });
}
