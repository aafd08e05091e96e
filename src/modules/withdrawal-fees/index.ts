// The withdrawal-fees module's public face: the route app.ts registers, the fee models it wires,
// and the network fee quotes charge on a payout onto a crypto network.
export { withdrawalFeeRoutes } from './routes.js';
export { noProductionModel, sandboxFeeModel, SANDBOX_NETWORK_FEES, type NetworkFeeEstimate, type WithdrawalFeeModel } from './model.js';
export { networkFeeFor, type FeeModels } from './service.js';
