import type { Principal, Permission } from './auth.js';

declare module 'fastify' {
  interface FastifySchema {
    /**
     * The parts of a multipart/form-data body, for the OpenAPI document only: such bodies are
     * read as streams by their handler, so Fastify must not validate them as `body`.
     */
    multipartBody?: unknown;
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
  }
}
