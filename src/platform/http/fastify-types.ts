import type { Principal, Permission } from './auth.js';

declare module 'fastify' {
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
