/**
 * SQLSTATEs that say the database cannot serve now, not that the request is wrong: connection
 * exceptions (class 08), insufficient resources (class 53: too many connections, out of memory,
 * disk full), operator intervention that ends sessions (57P01 admin shutdown, 57P02 crash
 * shutdown, 57P03 cannot connect now, 57P04 database dropped, 57P05 idle session timeout) and
 * 3D000, the database the process was started on no longer there for a new connection (being
 * restored or failed over; readiness answers 503 too).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|53...|57P0[1-5]|3D000)$/;
/** The socket's own errors when the server cannot be reached or drops the connection. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/**
 * node-postgres's messages when a connection dies under a query or cannot be opened in time (they
 * carry no code): "timeout expired" is a client's own connect timeout (connectionTimeoutMillis,
 * silent-connections.ts), "timeout exceeded when trying to connect" the pool's.
 */
const CONNECTION_LOST = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|timeout expired$)/;

/**
 * Whether `error` is the database being unreachable or refusing work for now: the request may
 * succeed if sent again, so it is answered 503 with a retry hint rather than 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || SOCKET_CODES.has(code))) return true;
  return CONNECTION_LOST.test(error.message);
}

/** SQLSTATEs of a session ended by the server: admin or crash shutdown, idle session timeout. */
const SESSION_ENDED_SQLSTATE = new Set(['57P01', '57P02', '57P05']);

/**
 * Whether `error` says the connection a statement went on was lost (its backend terminated, the
 * server restarted, the socket reset), rather than that the database cannot be reached: a
 * statement that changes nothing may be sent once more on a new connection.
 */
export function isConnectionLost(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (SESSION_ENDED_SQLSTATE.has(code) || code === 'ECONNRESET' || code === 'EPIPE')) return true;
  return /^(Connection terminated unexpectedly|Client has encountered a connection error)/.test(error.message);
}
