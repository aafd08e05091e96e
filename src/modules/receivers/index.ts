// The receivers module's public face: the receiver lookup routes app.ts registers.
export { receiverRoutes } from './routes.js';
