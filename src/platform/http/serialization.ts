import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { CUSTOM_FORMATS } from './validation.js';

type SerializerFactory = ReturnType<typeof SerializerSelector>;

const SERIALIZER_FORMATS = Object.fromEntries(Object.entries(CUSTOM_FORMATS).map(([name, validate]) => [name, { type: 'string' as const, validate }]));

/**
 * Fastify's own response serializers (fast-json-stringify), each built on the first response it
 * serialises instead of when its route is registered: building every route's serializers was
 * about a third of start-up's CPU, and most processes answer a fraction of the routes. The
 * first response of a route and status pays its build once (a few milliseconds); what is sent
 * is exactly what the eager build would send. The serializer picks a `oneOf` branch with its own
 * Ajv, which is handed Corridor's formats so a branch is chosen by the same rules requests are
 * checked by (without them Ajv ignores the format and warns on every build).
 */
export function serializersBuiltOnFirstUse(): SerializerFactory {
  const eager = SerializerSelector();
  return (externalSchemas, options) => {
    const build = eager(externalSchemas, { ...options, ajv: { ...options?.ajv, formats: SERIALIZER_FORMATS } });
    return (route) => {
      let serialize: ((doc: unknown) => string) | undefined;
      return (doc) => (serialize ??= build(route))(doc);
    };
  };
}
