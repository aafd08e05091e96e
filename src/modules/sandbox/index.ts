// The sandbox module's public face: its routes (sandbox send, the test clock), wired by app.ts.
export { sandboxRoutes, type SandboxRouteDeps } from './routes.js';
