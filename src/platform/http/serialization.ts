import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/**
 * Fastify's own response serializers (fast-json-stringify), each built on the first response it
 * serialises instead of when its route is registered: building every route's serializers was
 * about a third of start-up's CPU, and most processes answer a fraction of the routes. The
 * first response of a route and status pays its build once (a few milliseconds); what is sent
 * is exactly what the eager build would send.
 */
export function serializersBuiltOnFirstUse(): SerializerFactory {
  const eager = SerializerSelector();
  return (externalSchemas, options) => {
    const build = eager(externalSchemas, options);
    return (route) => {
      let serialize: ((doc: unknown) => string) | undefined;
      return (doc) => (serialize ??= build(route))(doc);
    };
  };
}
