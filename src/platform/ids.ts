import { randomBytes } from 'node:crypto';

/**
 * Resource ids are `<Type>:<uuid>` with a UUIDv7 (RFC 9562), so ids sort by creation time.
 * Inside one millisecond a 12-bit counter in `rand_a` keeps ids from one process monotonic
 * (RFC 9562 §6.2 method 1), which cursor pagination relies on.
 */
let lastMs = 0;
let counter = 0;

// One getrandom call per 256 ids instead of one per id: ids are minted on every request.
const POOL_IDS = 256;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function random16(): Buffer {
  if (poolOffset >= pool.length) {
    pool = randomBytes(16 * POOL_IDS);
    poolOffset = 0;
  }
  const slice = Buffer.from(pool.subarray(poolOffset, poolOffset + 16));
  poolOffset += 16;
  return slice;
}

export function uuidv7(nowMs: number = Date.now()): string {
  if (nowMs > lastMs) {
    lastMs = nowMs;
    counter = random16().readUInt16BE(0) & 0x3ff;
  } else {
    counter++;
    if (counter > 0xfff) {
      lastMs++;
      counter = 0;
    }
  }
  const bytes = random16();
  const ms = lastMs;
  bytes[0] = Math.floor(ms / 2 ** 40) & 0xff;
  bytes[1] = Math.floor(ms / 2 ** 32) & 0xff;
  bytes[2] = (ms >>> 24) & 0xff;
  bytes[3] = (ms >>> 16) & 0xff;
  bytes[4] = (ms >>> 8) & 0xff;
  bytes[5] = ms & 0xff;
  bytes[6] = 0x70 | ((counter >> 8) & 0x0f);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The lowest uuid that `uuidv7` can make in millisecond `ms` (clamped to its 48 bits): every id
 * made at or after `ms` sorts at or above it, so a time bound on rows that take their id at
 * creation is an id bound too.
 */
export function lowestUuidv7At(ms: number): string {
  const hex = Math.min(Math.max(ms, 0), 2 ** 48 - 1).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const UUID_RE = new RegExp(`^${UUID}$`);

/** JSON-schema pattern for an id of one resource type, e.g. `^Token:<uuid>$`. */
export function idPattern(type: string): string {
  return `^${type}:${UUID}$`;
}

export function formatId(type: string, uuid: string): string {
  return `${type}:${uuid}`;
}

/** The uuid inside `<type>:<uuid>`, or undefined when the id is of another type or malformed. */
export function parseId(type: string, id: string): string | undefined {
  const prefix = `${type}:`;
  if (!id.startsWith(prefix)) return undefined;
  const uuid = id.slice(prefix.length);
  return UUID_RE.test(uuid) ? uuid.toLowerCase() : undefined;
}

export function newId(type: string): string {
  return formatId(type, uuidv7());
}
