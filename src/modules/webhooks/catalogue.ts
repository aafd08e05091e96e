import Type, { type TSchema } from 'typebox';
import { compileBodySchema } from '../../platform/http/validation.js';
import { DateTime, StringEnum } from '../../platform/http/schemas.js';
import type { EventGroup } from '../../platform/outbox.js';

export const TEST_EVENT = 'TEST';

/** The TEST webhook: sent by `POST /sandbox/webhooks/test` and whenever the endpoint changes. */
export const TEST_EVENTS: EventGroup = {
  name: 'test',
  summary: 'Test webhook',
  description:
    'Checks that an endpoint receives and verifies webhooks. Sent by `POST /sandbox/webhooks/test` and each time ' +
    '`PATCH /config` sets a new `webhookEndpoint`. It carries no `data`.',
  types: { [TEST_EVENT]: 'The endpoint was set or changed, or a test was requested.' },
};

const TYPE_PATTERN = /^[A-Z][A-Z_]*(\.[A-Z][A-Z_]*)?$/;

/** Answers a receiver may give to any webhook. */
const RECEIVER_RESPONSES = {
  '200': { description: 'Received. Any 2xx acknowledges the delivery.' },
  '401': { description: 'The signature did not verify. Corridor retries, so fix the key and the retry succeeds.' },
  '409': { description: 'Already processed (the `id` was seen before). Counts as delivered.' },
};

/** The envelope every delivery carries, for one group's types and payload. */
export function envelopeSchema(types: string[], payload: TSchema | undefined, title?: string) {
  return Type.Object(
    {
      id: Type.String({
        pattern: '^Webhook:[0-9a-fA-F-]{36}$',
        description: 'Unique per event; the same on every retry and re-send. Use it to ignore duplicates.',
        examples: ['Webhook:019542f5-b3e7-1d02-0000-000000000007'],
      }),
      type: StringEnum(types, { description: 'What happened, as `OBJECT.EVENT`.' }),
      timestamp: DateTime({ description: 'When this delivery attempt was sent.' }),
      ...(payload ? { data: payload } : {}),
    },
    { ...(title ? { title } : {}) },
  );
}

function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** Rewrites every `$ref` of a schema (`Name#`, as route schemas write them to shared schemas). */
function mapRefs(value: unknown, map: (ref: string) => unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => mapRefs(v, map));
  if (!value || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  if (typeof object.$ref === 'string') return map(object.$ref);
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, mapRefs(v, map)]));
}

const refName = (ref: string) => /^([A-Za-z0-9_.-]+)#$/.exec(ref)?.[1];

/**
 * Every webhook event type Corridor sends, with the schema of its `data`: one place, fed by
 * the modules' declarations at wiring. The relay delivers only types listed here; the OpenAPI
 * document lists them as 3.1 `webhooks`; tests validate recorded payloads against them.
 */
export class EventCatalogue {
  private readonly groups: EventGroup[] = [];
  private readonly byType = new Map<string, EventGroup>();
  private readonly validators = new Map<EventGroup, (value: unknown) => boolean>();
  /** Extra answers a group's receiver may give (the incoming-payment approval), by group name. */
  private readonly responses = new Map<string, Record<string, unknown>>();

  private readonly shared = new Map<string, Record<string, unknown>>();

  /**
   * `shared`: the schemas payloads may refer to by `$ref` (`Name#`), the ones the app registers
   * as OpenAPI components.
   */
  constructor(shared: TSchema[], groups: EventGroup[]) {
    for (const schema of shared) {
      const id = (schema as { $id?: unknown }).$id;
      if (typeof id === 'string') this.shared.set(id, plain(schema));
    }
    for (const group of [TEST_EVENTS, ...groups]) this.add(group);
  }

  /** The schema with every shared `$ref` replaced by the schema it names, for a standalone validator. */
  private inline(schema: unknown, seen: string[] = []): unknown {
    return mapRefs(schema, (ref) => {
      const name = refName(ref);
      const target = name && this.shared.get(name);
      if (!name || !target || seen.includes(name)) throw new Error(`webhook payload schema refers to ${ref}, which cannot be inlined`);
      const { $id: _id, ...rest } = target;
      return this.inline(rest, [...seen, name]);
    });
  }

  private add(group: EventGroup): void {
    if (this.groups.some((g) => g.name === group.name)) throw new Error(`webhook event group ${group.name} is declared twice`);
    for (const type of Object.keys(group.types)) {
      if (!TYPE_PATTERN.test(type)) throw new Error(`webhook event type ${type} is not OBJECT.EVENT`);
      if (this.byType.has(type)) throw new Error(`webhook event type ${type} is declared twice`);
      this.byType.set(type, group);
    }
    this.groups.push(group);
  }

  /** Documents receiver answers beyond acknowledging (e.g. the approval round trip's 202/403/422). */
  describeResponses(groupName: string, responses: Record<string, unknown>): void {
    this.responses.set(groupName, responses);
  }

  has(type: string): boolean {
    return this.byType.has(type);
  }

  types(): string[] {
    return [...this.byType.keys()];
  }

  /** The schema `data` of this type must satisfy (undefined for TEST, or an unknown type). */
  payloadSchema(type: string): TSchema | undefined {
    return this.byType.get(type)?.payload;
  }

  /** Whether `data` is a valid payload of `type`; `errors` says why not. */
  validate(type: string, data: unknown): { valid: boolean; errors?: unknown } {
    const group = this.byType.get(type);
    if (!group) return { valid: false, errors: `unknown event type ${type}` };
    if (!group.payload) return { valid: data === undefined || data === null };
    let check = this.validators.get(group);
    if (!check) {
      check = compileBodySchema(this.inline(plain(group.payload)) as object);
      this.validators.set(group, check);
    }
    // The validator fills defaults: check a copy so the caller's value is untouched.
    const valid = check(structuredClone(data));
    return valid ? { valid } : { valid, errors: (check as unknown as { errors?: unknown }).errors };
  }

  /** The OpenAPI 3.1 `webhooks` object: one entry per group, its body the signed envelope. */
  openApi(): Record<string, unknown> {
    return Object.fromEntries(
      this.groups.map((group) => {
        const types = Object.keys(group.types);
        const list = Object.entries(group.types)
          .map(([type, when]) => `- \`${type}\`: ${when}`)
          .join('\n');
        return [
          group.name,
          {
            post: {
              operationId: `${group.name.replace(/-(\w)/g, (_, c: string) => c.toUpperCase())}Webhook`,
              summary: group.summary,
              description: `${group.description}\n\n${list}\n\nSigned in \`X-Service-Signature\`: see the Webhooks guide.`,
              tags: ['Webhooks'],
              security: [{ WebhookSignature: [] }],
              requestBody: {
                required: true,
                content: {
                  'application/json': {
                    schema: mapRefs(plain(envelopeSchema(types, group.payload, `${group.summary} payload`)), (ref) => ({
                      $ref: refName(ref) ? `#/components/schemas/${refName(ref)}` : ref,
                    })),
                  },
                },
              },
              responses: { ...RECEIVER_RESPONSES, ...(this.responses.get(group.name) ?? {}) },
            },
          },
        ];
      }),
    );
  }
}
