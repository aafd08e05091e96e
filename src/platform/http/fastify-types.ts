import type { Principal, Permission } from './auth.js';

declare module 'fastify' {
  interface FastifySchema {
    /**
     * The parts of a multipart/form-data body, for the OpenAPI document only: such bodies are
     * read as streams by their handler, so Fastify must not validate them as `body`.
     */
    multipartBody?: unknown;
    /**
     * The route accepts `Idempotency-Key` (it answers through `sendWrite(…, { idempotent: true })`):
     * the OpenAPI document declares the header. The key is checked by the write itself.
     */
    idempotencyKey?: boolean;
  }
  interface FastifyRequest {
    /** The authenticated platform token; set on every route that requires Basic auth. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** false: no credentials needed (ops routes, docs). Default: HTTP Basic required. */
    auth?: boolean;
    /** Permission the token must hold. Default: VIEW for reads, MANAGE for writes. */
    permission?: Permission;
    /**
     * Sandbox platforms only: what the route is, for the 403 a production platform gets (with a
     * hint where there is one), before its body or parameters are looked at.
     */
    sandboxOnly?: { what: string; hint?: string };
  }
}
