// The platforms module's public face: what the CLI and the server start may use.
export { bootstrapFirstPlatform, createPlatform, identifierKeyVersion, platformEnvironment, raiseIdentifierKeyVersion, type Environment } from './service.js';
