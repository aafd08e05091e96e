// The platforms module's public face: what the CLI and the server start may use.
export { bootstrapFirstPlatform, createPlatform, platformEnvironment, type Environment } from './service.js';
