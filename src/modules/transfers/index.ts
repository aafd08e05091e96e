// The transfers module's public face: the deprecated POST /transfer-in and /transfer-out, built on the quote path.
export { transferRoutes } from './routes.js';
export type { TransferDeps } from './transfer.js';
