import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import type { ModuleDeps } from '../../platform/module.js';
import {
  DEFAULT_OVERLAP_SECONDS,
  DeliveryList,
  DeliveryListQuery,
  DeliveryParams,
  RotateSigningKeyRequest,
  SigningKeyList,
  TestWebhookResponse,
  WebhookDeliveryDetail,
} from './schemas.js';
import type { Webhooks } from './service.js';

export const webhookRoutes: FastifyPluginAsyncTypebox<ModuleDeps & { webhooks: Webhooks }> = async (app, deps) => {
  const { keys, deliveries } = deps.webhooks;
  const tags = ['Webhooks'];

  app.get('/webhooks/signing-keys', {
    schema: {
      operationId: 'listWebhookSigningKeys',
      tags,
      summary: 'Public keys that verify webhook signatures',
      description:
        'Corridor addition. The `ACTIVE` key signs every webhook now (`X-Service-Signature`; its id is in `X-Service-Signature-Key-Id`). ' +
        'During a rotation the `NEXT` key is listed too: trust both until it activates. The first call creates the platform’s first key.',
      response: { 200: SigningKeyList, ...errorResponses(401, 500) },
    },
    handler: async (request) => ({ data: await keys.published(request.principal.platformId) }),
  });

  app.post('/webhooks/signing-keys/rotate', {
    schema: {
      operationId: 'rotateWebhookSigningKey',
      tags,
      summary: 'Rotate the webhook signing key',
      description:
        'Corridor addition. Publishes a new key now; it starts signing after `overlapSeconds` (default one day), when the current key ' +
        'is retired. `overlapSeconds: 0` switches at once (a suspected leak). 409 while a rotation is already under way, except with 0.',
      body: RotateSigningKeyRequest,
      response: { 200: SigningKeyList, ...errorResponses(400, 401, 403, 409, 500) },
    },
    handler: async (request) => {
      const platformId = request.principal.platformId;
      await keys.rotate(platformId, request.body.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS);
      return { data: await keys.published(platformId) };
    },
  });

  app.get('/webhooks/deliveries', {
    schema: {
      operationId: 'listWebhookDeliveries',
      tags,
      summary: 'List webhook deliveries',
      description:
        'Corridor addition: the delivery log. Newest first; each delivery shows its status, attempts, the last answer and latency, and the ' +
        'next retry. Filter by `eventType` and `status`; `totalCount` is given on the unfiltered list only.',
      querystring: DeliveryListQuery,
      response: { 200: DeliveryList, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => deliveries.list(request.principal.platformId, request.query),
  });

  app.get('/webhooks/deliveries/:webhookId', {
    schema: {
      operationId: 'getWebhookDelivery',
      tags,
      summary: 'Read a webhook delivery with its attempts',
      description:
        'Corridor addition. The delivery, the `data` it carries, and its attempts (URL, outcome, status, latency, the first 2 KiB of the answer): ' +
        'all of them, or the latest 100 when re-sends made more.',
      params: DeliveryParams,
      response: { 200: WebhookDeliveryDetail, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => deliveries.detail(request.principal.platformId, request.params.webhookId),
  });

  app.post('/webhooks/deliveries/:webhookId/resend', {
    schema: {
      operationId: 'resendWebhook',
      tags,
      summary: 'Send a webhook again now',
      description:
        'Corridor addition. One attempt now, with the same `id` (receivers that processed it may answer 409, which counts as delivered). ' +
        'Success marks the delivery `SUCCEEDED`; a failure leaves its status and retry schedule unchanged. Answers the delivery with the new attempt. ' +
        'No endpoint configured: 400 WEBHOOK_ENDPOINT_NOT_SET, and nothing is attempted. ' +
        'An incoming-payment approval question (`INCOMING_PAYMENT.PENDING`) is not sent again: 409 CONFLICT with `details.reason: APPROVAL_NOT_RESENDABLE` ' +
        '(it was decided when it was sent; a payment still waiting is decided with POST /transactions/{id}/approve or /reject).',
      params: DeliveryParams,
      response: { 200: WebhookDeliveryDetail, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    handler: async (request) => deliveries.resend(request.principal.platformId, request.params.webhookId),
  });

  const sendTestDescription =
    'Sends a signed `TEST` webhook to the configured endpoint now and reports its answer. Any answer but 2xx, or none within the ' +
    'timeout, is 400 WEBHOOK_DELIVERY_ERROR with what happened in `details`; no endpoint is 400 WEBHOOK_ENDPOINT_NOT_SET. Works for ' +
    'production platforms too. The attempt appears in the delivery log.';
  const sendTestRoutes = [
    { url: '/sandbox/webhooks/test', operationId: 'sendTestWebhook', tags: ['Sandbox'], summary: 'Send a test webhook', description: sendTestDescription },
    // The upstream's published SDK (`webhooks.sendTest()`) still calls the operation's earlier path,
    // under the same date version: the same operation answers there, so that SDK works unchanged.
    {
      url: '/webhooks/test',
      operationId: 'sendTestWebhookAtEarlierPath',
      tags,
      summary: 'Send a test webhook (the earlier path)',
      description: `POST /sandbox/webhooks/test at the path the upstream's published SDK calls (\`webhooks.sendTest()\`). ${sendTestDescription}`,
    },
  ];
  for (const { url, ...documented } of sendTestRoutes) {
    app.post(url, {
      schema: { ...documented, response: { 200: TestWebhookResponse, ...errorResponses(400, 401, 403, 500) } },
      handler: async (request) => deliveries.sendTest(request.principal.platformId),
    });
  }
};
