// The withdrawal-fees module's public face: the route app.ts registers and the fee models it wires.
export { withdrawalFeeRoutes } from './routes.js';
export { noProductionModel, sandboxFeeModel, SANDBOX_NETWORK_FEES, type NetworkFeeEstimate, type WithdrawalFeeModel } from './model.js';
export type { FeeModels } from './service.js';
