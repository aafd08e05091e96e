import type { FastifyInstance } from 'fastify';
import FindMyWay from 'find-my-way';

/** The methods a 405's `Allow` header can name, in the order it names them. */
const ALLOWABLE = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Every path the application serves, with all of its methods: tells an unknown path (404) from
 * a known path asked with another method (405 + `Allow`), for Fastify's not-found route and for
 * requests Node's HTTP parser refuses before Fastify sees them (an unknown method such as FOO).
 */
export class KnownRoutes {
  private readonly router = FindMyWay({ ignoreTrailingSlash: false });

  /** Records each route as it is added; call before any route is registered. */
  track(app: FastifyInstance): void {
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) {
        if (method === 'HEAD' || method === 'OPTIONS') continue;
        try {
          this.router.on(method as 'GET', route.url, () => {});
        } catch {
          // the same route registered twice (e.g. by a plugin); the first is enough
        }
      }
    });
  }

  /** The methods `path` (no query string) is served with; empty for a path nothing serves. */
  allowed(path: string): string[] {
    return ALLOWABLE.filter((method) => this.router.find(method, path) !== null);
  }
}
