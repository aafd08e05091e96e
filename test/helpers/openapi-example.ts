/** What an OpenAPI parameter or media type gives as its example: `example`, else the first of `examples`, else its schema's first. */
export function exampleOf(
  holder: { example?: unknown; examples?: Record<string, { value: unknown }>; schema?: { examples?: unknown[] } } | undefined,
): unknown {
  return holder?.example ?? Object.values(holder?.examples ?? {})[0]?.value ?? holder?.schema?.examples?.[0];
}
