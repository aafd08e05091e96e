// The config module's public face: what app.ts wires and what other modules may use.
export { configRoutes } from './routes.js';
export type { EmbeddedWalletConfig, PlatformConfig, PlatformCurrencyConfig } from './schemas.js';
export { CONFIG_ACCOUNTS_JOB, createDefaultConfig, getConfigRow, PlatformConfigCache, type ConfigAccountsJobPayload } from './service.js';
export { platformsWithUmaDomain, senderUmaDomain, type ConfigRow } from './repo.js';
export { CUSTOMER_INFO_FIELDS } from './schemas.js';
