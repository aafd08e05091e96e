// The sca module's public face: the routes app.ts registers (contact verification and strong
// customer authentication, which Corridor's payment providers do not require: README.md).
export { scaRoutes } from './routes.js';
