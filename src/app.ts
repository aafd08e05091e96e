import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyPluginAsync, type FastifyReply, type FastifyRequest, type HookHandlerDoneFunction } from 'fastify';
import type { Logger } from 'pino';
import { BASE_PATH } from './config.js';
import { configRoutes, PlatformConfigCache } from './modules/config/index.js';
import { beneficialOwnerRoutes, ownersOfCustomers, resealOwnerIdentifiers } from './modules/beneficial-owners/index.js';
import { BULK_UPLOAD_EVENTS, CUSTOMER_EVENTS, CUSTOMER_SCHEMAS, customerRoutes, RESEAL_JOB, resealCustomerIdentifiers, SEAL_PLAINTEXT_JOB } from './modules/customers/index.js';
import { directoryRoutes } from './modules/directories/index.js';
import { DocumentIntake, documentRoutes } from './modules/documents/index.js';
import { INVITATION_EVENTS, invitationRoutes } from './modules/invitations/index.js';
import { purgeEndedDailyVolumes, QUOTE_SCHEMAS, quoteRoutes, releaseDailyVolume } from './modules/quotes/index.js';
import { transferRoutes } from './modules/transfers/index.js';
import { builtInRates, ExchangeRates, HttpRateProvider, rateRoutes } from './modules/rates/index.js';
import { purgeExpiredReceiverLookups, receiverRoutes } from './modules/receivers/index.js';
import { noProductionModel, sandboxFeeModel, withdrawalFeeRoutes, type WithdrawalFeeModel } from './modules/withdrawal-fees/index.js';
import { createAccountsLedger, INTERNAL_ACCOUNT_EVENTS, internalAccountRoutes } from './modules/internal-accounts/index.js';
import { EXTERNAL_ACCOUNT_EVENTS, EXTERNAL_ACCOUNT_SCHEMAS, externalAccountRoutes, LIVENESS_PATH, primaryIdentifierOf, type InstitutionDirectory } from './modules/external-accounts/index.js';
import { TokenAuthenticator, tokenRoutes } from './modules/tokens/index.js';
import {
  LightningNode,
  purgeExpiredUmaLookups,
  purgeSpentNonces,
  registerUmaWellKnownRoutes,
  SimulatedTestVasp,
  UmaSender,
  umaRoutes,
  VaspTransport,
  vaspKeySource,
} from './modules/uma/index.js';
import { KYC_PAGE_PATH, KycLinkTokens, reviewUnderway, VERIFICATION_EVENTS, verificationRoutes } from './modules/verifications/index.js';
import { LocalEnclave, OidcVerifier, purgeEndedSessions, purgeOtpChallenges, purgeSpentOidcTokens, SignedRequests, WalletAuth, walletAuthRoutes, type WalletEnclave } from './modules/wallet-auth/index.js';
import { sandboxRoutes } from './modules/sandbox/index.js';
import { scaRoutes } from './modules/sca/index.js';
import { unbuiltRoutes } from './modules/unbuilt/index.js';
import {
  DepositFeed,
  FundingDeposits,
  HttpRails,
  INCOMING_PAYMENT_EVENTS,
  OUTGOING_PAYMENT_EVENTS,
  TRANSACTION_SCHEMAS,
  IncomingPayments,
  Payments,
  SandboxRails,
  transactionRoutes,
  type DepositSource,
  type RailProvider,
} from './modules/transactions/index.js';
import { EventCatalogue, webhookRoutes, Webhooks } from './modules/webhooks/index.js';
import { systemResolver, type Resolver } from './platform/address-guard.js';
import type { BlobStore } from './platform/blob-store.js';
import type { DbHandle, DbOrTx } from './platform/db/database.js';
import { registerBasicAuth } from './platform/http/auth.js';
import { BodyBudget, registerBodyBudget } from './platform/http/body-budget.js';
import { clientErrorHandler } from './platform/http/client-errors.js';
import { frameworkErrors, MAX_URI_BYTES, registerErrorHandling } from './platform/http/error-handler.js';
import './platform/http/fastify-types.js';
import { loadMasterKey } from './platform/crypto/master-key.js';
import { TenantSecretBox } from './platform/crypto/secret-box.js';
import { RequestFingerprints } from './platform/idempotency.js';
import { MAX_JSON_DEPTH, scanJson } from './platform/http/json-depth.js';
import { KnownRoutes } from './platform/http/known-routes.js';
import { HttpMetrics } from './platform/http/metrics.js';
import { registerLoadShedding } from './platform/http/overload.js';
import { openApiOptions, transformForOpenApi, withFormatPatterns } from './platform/http/openapi.js';
import { registerOpsRoutes, type Startup } from './platform/http/ops.js';
import { registerPathIds } from './platform/http/path-ids.js';
import { ERROR_SCHEMAS } from './platform/http/schemas.js';
import { serializersBuiltOnFirstUse } from './platform/http/serialization.js';
import { registerTextChecks } from './platform/http/text-input.js';
import { validatorCompiler } from './platform/http/validation.js';
import { AppError } from './platform/errors.js';
import { uuidv7 } from './platform/ids.js';
import { withJwksOverrides } from './platform/oidc-issuers.js';
import { NotifiedCache } from './platform/cache.js';
import { OffsetPlatformClock, PLATFORM_CLOCK_CHANNEL } from './platform/platform-clock.js';
import type { ModuleDeps } from './platform/module.js';
import { HttpMessageSender, UndeliveredMessages, type MessageSender } from './platform/messages.js';
import { doneJobsPurge, Retention } from './platform/retention.js';

/**
 * Path segments a request's log line leaves out. The secret in a hosted page's URL
 * (`<KYC_PAGE_PATH>/<token>…`, `<LIVENESS_PATH>/<token>`), the link's only credential; an
 * invitation's code, which claims it; and the UMA address or user name a receiver lookup, an
 * lnurlp lookup or a pay request names, a person's identifier (the reason query strings are left
 * out too). By path rather than by route parameter, so that a URL no route matched (a wrong
 * method) is written without them too.
 */
const HOSTED_PAGE_TOKEN = new RegExp(`((?:${KYC_PAGE_PATH}|${LIVENESS_PATH})/)[^/?#]+`);
const PERSON_OR_CODE = /((?:\/invitations|\/receiver\/uma|\/\.well-known\/lnurlp|\/uma\/payreq)\/)[^/?#]+/;

export interface AppDeps extends Omit<ModuleDeps, 'identifiers' | 'fingerprints'> {
  handle: DbHandle;
  logger: Logger;
  /** Set by server.ts: /readyz answers 503 until the process has finished starting. */
  startup?: Startup;
}

/** Schemas other schemas refer to by `$ref`: one OpenAPI component each. */
const SHARED_SCHEMAS = [...ERROR_SCHEMAS, ...CUSTOMER_SCHEMAS, ...EXTERNAL_ACCOUNT_SCHEMAS, ...QUOTE_SCHEMAS, ...TRANSACTION_SCHEMAS];

export type App = Awaited<ReturnType<typeof buildApp>>;

/**
 * Builds the HTTP application: platform plugins first (errors, validation, auth, metrics,
 * OpenAPI), then every module's routes under the versioned base path. Not yet listening, so
 * tests can use `inject`.
 */
export interface AppOptions {
  /** Embedders (and tests) may add routes behind the same authentication and error handling. */
  extraRoutes?: FastifyPluginAsync;
  /** Where document files are kept; default: the database. An object store plugs in here. */
  blobStore?: BlobStore;
  /** The wallet enclave; default: in-process, keyed by the master key. An HSM plugs in here. */
  enclave?: WalletEnclave;
  /** Where OTP messages go for production platforms; default: CORRIDOR_MESSAGES_URL, else nowhere. */
  messages?: MessageSender;
  /** Checks OIDC tokens; default: JWKS cached 10 minutes, refetched on an unknown key at most every 30 s. */
  oidc?: OidcVerifier;
  /** Institutions that confirm account holder names; default: simulated (sandbox), CORRIDOR_BENEFICIARY_URL (production). */
  institutions?: { sandbox?: InstitutionDirectory; production?: InstitutionDirectory };
  /** Resolves the hosts production platforms' requests go to (webhooks, other UMA VASPs); default: the system resolver. Tests answer DNS here. */
  webhookResolver?: Resolver;
  /** Network fees of production platforms' crypto withdrawals: the estimate's and the quotes' that pay out onto a network; default: none (503 for both). Sandbox platforms use the documented table. */
  withdrawalFees?: WithdrawalFeeModel;
  /** Sends production platforms' payouts; default: CORRIDOR_RAILS_URL, else production payments are refused. */
  railProvider?: RailProvider;
}

/**
 * Every webhook event type and its payload, one group per module that emits them. A module
 * adding events adds its group here.
 */
export function eventCatalogue(): EventCatalogue {
  return new EventCatalogue(SHARED_SCHEMAS, [
    CUSTOMER_EVENTS,
    VERIFICATION_EVENTS,
    INTERNAL_ACCOUNT_EVENTS,
    EXTERNAL_ACCOUNT_EVENTS,
    OUTGOING_PAYMENT_EVENTS,
    INCOMING_PAYMENT_EVENTS,
    BULK_UPLOAD_EVENTS,
    INVITATION_EVENTS,
  ]);
}

export async function buildApp(appDeps: AppDeps, options: AppOptions = {}) {
  const masterKey = loadMasterKey(appDeps.config.masterKey, appDeps.config.dataDir, appDeps.config.databaseUrl !== undefined);
  const deps = { ...appDeps, identifiers: new TenantSecretBox(masterKey, 'tax-identifier'), fingerprints: new RequestFingerprints(masterKey) };
  const routes = new KnownRoutes();
  const metrics = new HttpMetrics();
  /**
   * A request's one log line and its count in the metrics: from the onResponse hook, and from
   * frameworkErrors for the requests Fastify's router refuses, which run no hook.
   */
  const answered = (request: FastifyRequest, reply: FastifyReply) => {
    // request.routeOptions builds a new object on every read: read it once for the log line and the metrics.
    const route = request.routeOptions.url;
    // The path only: a query string holds what a caller filters by (UMA addresses, its own customer ids).
    const query = request.url.indexOf('?');
    request.log.info(
      {
        method: request.method,
        url: (query < 0 ? request.url : request.url.slice(0, query)).replace(HOSTED_PAGE_TOKEN, '$1[token]').replace(PERSON_OR_CODE, '$1[redacted]'),
        route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        platformId: request.principal?.platformId,
      },
      'request',
    );
    metrics.observe(request.method, route ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
  };
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => uuidv7(),
    requestIdHeader: false,
    bodyLimit: deps.config.bodyLimitBytes,
    // A client that stalls sending its request cannot hold the connection (Fastify turns Node's
    // limits off): headers not all in by the timeout are 408 (Node looks every
    // `connectionsCheckingInterval`, 30 s by default), and a connection silent that long, a body
    // stalled midway, is closed.
    requestTimeout: deps.config.requestTimeoutMs,
    connectionTimeout: deps.config.requestTimeoutMs,
    http: { connectionsCheckingInterval: Math.min(30_000, Math.ceil(deps.config.requestTimeoutMs / 4)) },
    // Shutdown answers our own 503 envelope (registerErrorHandling), not Fastify's.
    return503OnClosing: false,
    // Path segments are bounded by the URI limit alone; an over-long id is a 404 like any other bad id.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: MAX_URI_BYTES },
    frameworkErrors: frameworkErrors(answered),
    clientErrorHandler: clientErrorHandler(routes),
    // Response serializers are built on a route's first response, not at start-up (validators likewise: validation.ts).
    schemaController: { compilersFactory: { buildSerializer: serializersBuiltOnFirstUse() } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  routes.track(app);
  app.setValidatorCompiler(validatorCompiler);
  registerErrorHandling(app, routes);
  registerPathIds(app);
  registerTextChecks(app);
  // Bodies held in memory are bounded per process, not only per request (CORRIDOR_BODY_BYTES_IN_FLIGHT).
  registerBodyBudget(app, new BodyBudget(deps.config.bodyBytesInFlight));

  // An empty body with a JSON content type is no body, not a parse error (DELETE from many clients).
  // Bytes that are not UTF-8 are refused, not replaced with U+FFFD.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  // Bodies are JSON (or multipart, where a route takes files); Fastify's own text/plain parser
  // handed routes a string their schema then called "not an object".
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // Bodies are read as sent: a compressed one was read as JSON text (gzip: "not UTF-8"; a
    // plain body labelled br: accepted).
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      return done(new AppError('INVALID_INPUT', 'Unsupported Content-Encoding; send the body uncompressed.'), undefined);
    }
    // JSON is UTF-8 (RFC 8259): a body declared in another charset would be misread, not converted.
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      return done(new AppError('INVALID_INPUT', 'Unsupported charset; send the JSON body in UTF-8.'), undefined);
    }
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      return done(new AppError('INVALID_INPUT', 'The request body is not valid UTF-8.'), undefined);
    }
    if (text.trim() === '') return done(null, undefined);
    const scanned = scanJson(text);
    if (scanned && 'tooDeep' in scanned) return done(new AppError('INVALID_INPUT', `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`), undefined);
    parseJson(request, text, (error, parsed) => {
      if (error) return done(error, undefined);
      if (scanned) return done(new AppError('INVALID_INPUT', `The request body names ${JSON.stringify(scanned.duplicate.slice(0, 100))} twice in one object.`), undefined);
      done(null, parsed);
    });
  });

  // Every hook that runs on each request is synchronous (done callbacks, not async functions):
  // an async hook costs a promise and a microtask turn per request, which on a point read was
  // several per cent of its CPU (bench/README.md). The request id is set by registerErrorHandling's.
  // New requests are refused before any work while the database queue or the event loop is too far behind (CORRIDOR_OVERLOAD_WAIT_MS).
  registerLoadShedding(app, { connectionWaitMs: deps.handle.connectionWaitMs, maxWaitMs: deps.config.overloadWaitMs, metrics });
  // A missing body is validated as an empty object, so the caller learns every required field.
  // Only routes with a body schema get the hook, so other requests do not pay for the check.
  app.addHook('onRoute', (route) => {
    if (!route.schema?.body) return;
    const emptyBodyAsObject = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (request.body === undefined) request.body = {};
      done();
    };
    route.preValidation = [...(route.preValidation === undefined ? [] : [route.preValidation].flat()), emptyBodyAsObject];
  });
  app.addHook('onResponse', (request, reply, done) => {
    answered(request, reply);
    done();
  });
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);

  const catalogue = eventCatalogue();
  await app.register(swagger, { ...openApiOptions(deps.config, catalogue.openApi()), transform: transformForOpenApi, transformObject: withFormatPatterns });
  // The reference UI is same-origin HTML: a CSP that runs only its own script files, never sniffed, framed only by itself.
  await app.register(async (docs) => {
    docs.addHook('onRequest', async (_request, reply) => {
      reply.header('x-content-type-options', 'nosniff').header('x-frame-options', 'SAMEORIGIN');
    });
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { docExpansion: 'list', deepLinking: true },
      staticCSP: true,
      // The UI's script adds style elements and attributes of its own; scripts stay its files only.
      transformStaticCSP: (header) => header.replace("style-src 'self' https:", "style-src 'self' https: 'unsafe-inline'"),
    });
  });

  registerOpsRoutes(app, { ...deps, metrics });

  // Corridor as a UMA VASP: its keys (made on first start unless configured) and its well-known endpoints at the root.
  const uma = {
    keys: vaspKeySource(deps.db, deps.clock, deps.config.uma, masterKey),
    node: new LightningNode(masterKey),
    resolver: options.webhookResolver ?? systemResolver,
  };

  const authenticator = new TokenAuthenticator(deps.handle, deps.config.cacheTtlMs);
  const configCache = new PlatformConfigCache(deps.handle, deps.config.cacheTtlMs);

  const enclave = options.enclave ?? new LocalEnclave(masterKey);
  const messages =
    options.messages ?? (deps.config.messages.url ? new HttpMessageSender({ ...deps.config.messages, url: deps.config.messages.url }) : new UndeliveredMessages(deps.logger));
  const signed = new SignedRequests(deps.db, deps.clock, deps.jobs, deps.config.wallet.settleWaitMs);
  const oidc = options.oidc ??
    new OidcVerifier({ cooldownMs: 30_000, cacheMaxAgeMs: 10 * 60_000, timeoutMs: 5_000, knownIssuers: withJwksOverrides(deps.config.wallet.oidcJwksOverrides) });
  const walletAuth = new WalletAuth({
    db: deps.db,
    clock: deps.clock,
    jobs: deps.jobs,
    enclave,
    messages,
    signed,
    oidc,
    configs: configCache,
    sessionSeconds: deps.config.wallet.sessionSeconds,
    logger: deps.logger,
  });
  const wallet = { walletAuth, signed, enclavePublicKey: enclave.publicKey };
  // Tax identifiers stored before sealing (the migration's job) or under a rotated key: customers' and owners'.
  const resealIdentifiers = async (job: { platform_id: string | null }) => {
    const platformId = job.platform_id ?? undefined;
    await resealCustomerIdentifiers(deps.db, deps.identifiers, platformId);
    await resealOwnerIdentifiers(deps.db, deps.identifiers, platformId);
  };
  deps.jobs.register(SEAL_PLAINTEXT_JOB, resealIdentifiers);
  deps.jobs.register(RESEAL_JOB, resealIdentifiers);
  // The one writer of balances; modules that move money get it from here.
  const ledger = createAccountsLedger(deps.clock);
  // Every platform-owned time rule reads the platform's clock: sandbox platforms can move theirs forward.
  const clockOffsets = new NotifiedCache<number>(deps.handle, PLATFORM_CLOCK_CHANNEL, deps.config.cacheTtlMs);
  await clockOffsets.start();
  const platformClock = new OffsetPlatformClock(deps.db, deps.clock, clockOffsets);
  const webhooks = new Webhooks({
    handle: deps.handle,
    clock: deps.clock,
    platformClock,
    logger: deps.logger,
    config: deps.config,
    jobs: deps.jobs,
    catalogue,
    configs: configCache,
    masterKey,
    metrics,
    ...(options.webhookResolver ? { resolver: options.webhookResolver } : {}),
  });
  // Each opens its LISTEN connection: at once rather than one after another (start-up time).
  await Promise.all([authenticator.start(), configCache.start(), webhooks.start()]);
  app.decorate('webhooks', webhooks);
  const rates = new ExchangeRates({
    db: deps.db,
    clock: deps.clock,
    sandbox: builtInRates,
    ...(deps.config.rates.url ? { production: new HttpRateProvider({ ...deps.config.rates, url: deps.config.rates.url }) } : {}),
  });
  // Messages to other VASPs: over the network, except sandbox platforms' to the hosted sandbox's test VASP, simulated here.
  const vasps = new VaspTransport(deps.config.uma, uma.resolver, [new SimulatedTestVasp({ masterKey, platformClock, rates })]);
  // The sending VASP: pay requests for quotes to UMA addresses, and the Lightning leg of sandbox payouts to them.
  const umaSender = new UmaSender({ db: deps.db, clock: deps.clock, config: deps.config, keys: uma.keys, vasps, rates });
  const railsUrl = deps.config.rails.url;
  // Sandbox payouts and pulls end as the external account's identifier says (docs/payments.md, Sandbox outcomes).
  const sandboxRails = new SandboxRails((platformId, accountId) => primaryIdentifierOf(deps.db, platformId, accountId));
  const productionRails = options.railProvider ?? (railsUrl ? new HttpRails({ ...deps.config.rails, url: railsUrl }) : undefined);
  const payments = new Payments({
    db: deps.db,
    clock: deps.clock,
    platformClock,
    ledger,
    jobs: deps.jobs,
    logger: deps.logger,
    rails: {
      sandbox: umaSender.rails(sandboxRails, 'sandbox'),
      ...(productionRails ? { production: productionRails } : {}),
    },
    // A payment that ended before money left the sender gives its quote's daily volume back.
    endedUnspent: releaseDailyVolume,
  });
  app.decorate('payments', payments);
  const incomingPayments = new IncomingPayments({ db: deps.db, clock: deps.clock, platformClock, ledger, jobs: deps.jobs, approvals: webhooks.approvals });
  app.decorate('incomingPayments', incomingPayments);
  const deposits = new FundingDeposits({ clock: deps.clock, platformClock, ledger });
  // Production deposits to funding instructions come from the rail provider's feed, when it has one.
  if (productionRails && 'listDeposits' in productionRails) {
    await new DepositFeed({ db: deps.db, clock: deps.clock, jobs: deps.jobs, logger: deps.logger, deposits, source: productionRails as RailProvider & DepositSource }).start();
  }
  // Rows that no rule needs any more are deleted about hourly (docs/development.md, Retention).
  new Retention({
    db: deps.db,
    clock: deps.clock,
    jobs: deps.jobs,
    logger: deps.logger,
    purges: [
      doneJobsPurge(deps.db, deps.config.jobs.retentionHours * 3_600_000),
      { table: 'uma_nonces', batch: (now, limit) => purgeSpentNonces(deps.db, now, deps.config.uma.timestampWindowSeconds, limit) },
      { table: 'uma_lookups', batch: (now, limit) => purgeExpiredUmaLookups(deps.db, now, limit) },
      { table: 'receiver_lookups', batch: (now, limit) => purgeExpiredReceiverLookups(deps.db, now, limit) },
      { table: 'oidc_tokens_used', batch: (now, limit) => purgeSpentOidcTokens(deps.db, now, limit) },
      { table: 'auth_sessions', batch: (now, limit) => purgeEndedSessions(deps.db, now, limit) },
      { table: 'otp_challenges', batch: (now, limit) => purgeOtpChallenges(deps.db, now, limit) },
      { table: 'daily_volumes', batch: (now, limit) => purgeEndedDailyVolumes(deps.db, now, limit) },
    ],
  }).register();
  registerUmaWellKnownRoutes(app, { ...deps, ...uma, vasps, incomingPayments, rates, platformClock });

  // One intake of uploaded documents for POST /documents and the hosted verification page.
  const intake = await DocumentIntake.open({ ...deps, ...(options.blobStore ? { blobs: options.blobStore } : {}) });
  app.addHook('onClose', async () => intake.close());

  await app.register(
    async (api) => {
      registerBasicAuth(api, authenticator);
      api.get('/openapi.json', { schema: { hide: true }, config: { auth: false } }, async () => app.swagger());
      await api.register(tokenRoutes, { ...deps, authenticator });
      await api.register(configRoutes, { ...deps, configCache });
      const owners = { ownersOf: (db: DbOrTx, platformId: string, customerUuids: string[]) => ownersOfCustomers(db, deps.identifiers, platformId, customerUuids) };
      await api.register(customerRoutes, { ...deps, ...wallet, owners });
      await api.register(internalAccountRoutes, { ...deps, ...wallet, ledger, platformClock });
      await api.register(walletAuthRoutes, { ...deps, ...wallet });
      await api.register(beneficialOwnerRoutes, deps);
      await api.register(verificationRoutes, { ...deps, intake, kycLinkTokens: new KycLinkTokens(masterKey) });
      await api.register(webhookRoutes, { ...deps, webhooks });
      await api.register(documentRoutes, { ...deps, reviews: { reviewUnderway }, intake });
      await api.register(rateRoutes, { rates, configCache });
      // One fee model for the estimate and the quotes that pay out onto a network: they charge the same network fee.
      const feeModels = { sandbox: sandboxFeeModel, production: options.withdrawalFees ?? noProductionModel };
      await api.register(quoteRoutes, { ...deps, platformClock, rates, configCache, payments, walletAuth, signed, uma: umaSender, feeModels });
      await api.register(transferRoutes, { ...deps, platformClock, rates, configCache, payments, walletAuth, signed, uma: umaSender, feeModels });
      await api.register(umaRoutes, { ...deps, ...uma, vasps, incomingPayments, rates, platformClock });
      await api.register(externalAccountRoutes, { ...deps, ...(options.institutions ? { institutions: options.institutions } : {}) });
      await api.register(directoryRoutes, deps);
      await api.register(invitationRoutes, deps);
      await api.register(scaRoutes, deps);
      await api.register(receiverRoutes, { ...deps, rates });
      await api.register(withdrawalFeeRoutes, { ...deps, rates, configCache, feeModels });
      await api.register(transactionRoutes, { ...deps, payments, approvals: webhooks.approvals });
      await api.register(sandboxRoutes, { ...deps, payments, incomingPayments, deposits, platformClock });
      // The upstream's operations not built yet: 501 NOT_IMPLEMENTED rather than 404 (docs/not-built.md).
      await api.register(unbuiltRoutes);
      if (options.extraRoutes) await api.register(options.extraRoutes);
    },
    { prefix: BASE_PATH },
  );

  return app;
}
