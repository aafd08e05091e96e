import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalidInput, type FieldError } from '../errors.js';

/**
 * Text PostgreSQL cannot store, and no caller means to send: U+0000 (text and jsonb refuse it)
 * and a UTF-16 surrogate without its partner (no UTF-8 encoding exists for it).
 */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const MESSAGE = 'must not contain U+0000 or an unpaired UTF-16 surrogate (\\ud800–\\udfff)';

const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/**
 * `text` with every character PostgreSQL cannot store (U+0000, an unpaired surrogate) replaced
 * by U+FFFD: for text Corridor keeps but did not take from a request it can refuse (a webhook
 * receiver's answer). Truncate before, not after: a cut can split a surrogate pair.
 */
export function storableText(text: string): string {
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, '\ufffd') : text;
}

/** `value` (parsed JSON) with `storableText` applied to every string and object key in it. */
export function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [storableText(key), storableJson(item)]));
  }
  return value;
}

/** A field name safe to print: the offending characters escaped. */
function printable(name: string): string {
  // Most names have nothing to escape: no copy (this runs for every query parameter and body key).
  if (!UNSTORABLE.test(name)) return name;
  return name.replace(UNSTORABLE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Every string (and object key) inside `value` that PostgreSQL could not store, as field
 * errors named by dot path under `prefix`.
 */
export function unstorableText(value: unknown, prefix = ''): FieldError[] {
  const errors: FieldError[] = [];
  // The path is kept as segments and joined only for an error: building every member's path as a
  // string cost more than the JSON.parse of the body it walks (1 MiB bodies of many small members).
  const trail: string[] = prefix ? [prefix] : [];
  const name = () => trail.join('.') || '(body)';
  const walk = (node: unknown) => {
    if (typeof node === 'string') {
      if (UNSTORABLE.test(node)) errors.push({ field: name(), message: MESSAGE });
    } else if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        trail.push(String(i));
        walk(node[i]);
        trail.pop();
      }
    } else if (node !== null && typeof node === 'object') {
      for (const key in node) {
        if (!Object.hasOwn(node, key)) continue;
        trail.push(printable(key));
        if (UNSTORABLE.test(key)) errors.push({ field: name(), message: `name ${MESSAGE}` });
        else walk((node as Record<string, unknown>)[key]);
        trail.pop();
      }
    }
  };
  walk(value);
  return errors;
}

/**
 * Query parameters whose percent-encoding is not UTF-8 (`%FF`, a lone `%ED%A0%80`): the query
 * parser keeps such text as it came, so they are found on the raw query string.
 */
function undecodableQuery(url: string): FieldError[] {
  const start = url.indexOf('?');
  // Only a percent sign can start an undecodable sequence.
  if (start === -1 || !url.includes('%', start)) return [];
  const errors: FieldError[] = [];
  for (const pair of url.slice(start + 1).split('&')) {
    if (pair === '') continue;
    const [rawName = '', ...rest] = pair.split('=');
    const decode = (text: string) => decodeURIComponent(text.replace(/\+/g, ' '));
    let name = rawName;
    try {
      name = decode(rawName);
      decode(rest.join('='));
    } catch {
      errors.push({ field: printable(name), message: 'is not valid percent-encoded UTF-8' });
    }
  }
  return errors;
}

/**
 * Refuses, for every route at once, text that the database cannot store or that was not valid
 * UTF-8, before any schema or handler sees it: 400 INVALID_INPUT naming each field (body fields
 * by dot path, query parameters by name). Multipart text parts are checked where they are read
 * (`receiveForm`). A JSON body that is not valid UTF-8 is refused by the JSON parser (app.ts).
 */
export function registerTextChecks(app: FastifyInstance): void {
  // Synchronous (a done callback): it runs on every request, and an async hook costs a promise per request.
  app.addHook('preValidation', (request: FastifyRequest, _reply, done) => {
    const errors = [...undecodableQuery(request.url), ...unstorableText(request.query), ...unstorableText(request.body)];
    done(errors.length > 0 ? invalidInput(errors, 'The request has text that cannot be accepted.') : undefined);
  });
}
