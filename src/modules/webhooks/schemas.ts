import Type, { type Static } from 'typebox';
import { DateTime, IdParam, ListResponse, PaginationQuery, ResourceId, StringEnum } from '../../platform/http/schemas.js';

/** Longest a rotation may keep the old key signing while the next one is published. */
export const MAX_OVERLAP_SECONDS = 30 * 86_400;
export const DEFAULT_OVERLAP_SECONDS = 86_400;
export const DELIVERY_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'] as const;

export const SigningKey = Type.Object(
  {
    id: ResourceId('WebhookSigningKey'),
    status: StringEnum(['ACTIVE', 'NEXT'], { description: '`ACTIVE` signs deliveries now; `NEXT` signs from `activatesAt`.' }),
    algorithm: StringEnum(['ECDSA_P256_SHA256'], { description: 'ECDSA on P-256 over SHA-256 of the raw body; the signature is DER, base64.' }),
    publicKey: Type.String({ description: 'SubjectPublicKeyInfo, PEM: pass it to `crypto.createPublicKey` as it is.' }),
    createdAt: DateTime(),
    activatesAt: DateTime({ description: 'When the key starts signing.' }),
    retiresAt: Type.Optional(DateTime({ description: 'When the key stops signing and is no longer published (a rotation is under way).' })),
  },
  { title: 'WebhookSigningKey' },
);
export type SigningKey = Static<typeof SigningKey>;

export const SigningKeyList = Type.Object({ data: Type.Array(SigningKey) }, { title: 'WebhookSigningKeyListResponse' });

export const RotateSigningKeyRequest = Type.Object(
  {
    overlapSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_OVERLAP_SECONDS,
        default: DEFAULT_OVERLAP_SECONDS,
        description: 'How long both keys are published before the new one signs (default one day). 0 switches at once.',
      }),
    ),
  },
  { additionalProperties: false, title: 'WebhookSigningKeyRotateRequest' },
);

export const TestWebhookResponse = Type.Object(
  {
    url: Type.String({ description: 'Where the test webhook was sent.' }),
    response_status: Type.Integer({ description: 'HTTP status the endpoint answered.' }),
    response_body: Type.Optional(Type.String({ description: 'What the endpoint answered (first 16 KiB).' })),
  },
  { title: 'TestWebhookResponse' },
);

const optionalDate = (description: string) => Type.Optional(DateTime({ description }));

export const WebhookDelivery = Type.Object(
  {
    id: ResourceId('Webhook', { description: 'The `id` of the webhook the receiver got.' }),
    type: Type.String({ description: 'Event type, e.g. `CUSTOMER.KYC_APPROVED`.' }),
    resourceId: Type.Optional(Type.String({ description: 'The object the event is about.' })),
    status: StringEnum(DELIVERY_STATUSES, {
      description: '`PENDING`: not yet acknowledged, retries scheduled. `SUCCEEDED`: a 2xx or 409 came back. `FAILED`: every attempt failed.',
    }),
    attempts: Type.Integer({ description: 'Attempts made so far.' }),
    lastAttemptAt: optionalDate('When the last attempt was made.'),
    lastResponseStatus: Type.Optional(Type.Integer({ description: 'HTTP status of the last answer.' })),
    lastLatencyMs: Type.Optional(Type.Integer({ description: 'How long the last attempt took.' })),
    lastError: Type.Optional(Type.String({ description: 'Why the last attempt failed, when no HTTP answer came or it was not 2xx.' })),
    nextAttemptAt: optionalDate('When the next retry is due (PENDING only).'),
    deliveredAt: optionalDate('When the endpoint first acknowledged it.'),
    createdAt: DateTime({ description: 'When the event happened.' }),
  },
  { title: 'WebhookDelivery' },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookAttempt = Type.Object(
  {
    number: Type.Integer({ minimum: 1 }),
    attemptedAt: DateTime(),
    url: Type.Optional(Type.String({ description: 'The endpoint at the time of the attempt.' })),
    outcome: StringEnum(['SUCCEEDED', 'FAILED', 'REFUSED'], { description: '`REFUSED`: production endpoints may not resolve to private addresses; nothing was sent.' }),
    responseStatus: Type.Optional(Type.Integer()),
    responseBody: Type.Optional(Type.String({ description: 'The first 2 KiB of the answer.' })),
    latencyMs: Type.Integer(),
    error: Type.Optional(Type.String()),
  },
  { title: 'WebhookAttempt' },
);
export type WebhookAttempt = Static<typeof WebhookAttempt>;

export const WebhookDeliveryDetail = Type.Object(
  {
    ...WebhookDelivery.properties,
    data: Type.Optional(Type.Unknown({ description: 'The `data` the webhook carries.' })),
    attemptLog: Type.Array(WebhookAttempt, { description: 'The attempts, oldest first: all of them, or the latest 100 when re-sends made more (`attempts` counts them all).' }),
  },
  { title: 'WebhookDeliveryDetail' },
);
export type WebhookDeliveryDetail = Static<typeof WebhookDeliveryDetail>;

export const DeliveryListQuery = Type.Object(
  {
    eventType: Type.Optional(Type.String({ pattern: '^[A-Z][A-Z_]*(\\.[A-Z][A-Z_]*)?$', maxLength: 100, description: 'Only this event type.' })),
    status: Type.Optional(StringEnum(DELIVERY_STATUSES)),
    ...PaginationQuery,
  },
  { additionalProperties: false },
);
export type DeliveryListQuery = Static<typeof DeliveryListQuery>;

export const DeliveryList = ListResponse(WebhookDelivery, 'WebhookDeliveryListResponse');
export const DeliveryParams = Type.Object({ webhookId: IdParam('Webhook', 'REFERENCE_NOT_FOUND', 'webhook event') }, { additionalProperties: false });
