// The unbuilt module's public face: the routes app.ts registers, and the list they answer for.
export { unbuiltRoutes } from './routes.js';
export { UNBUILT_OPERATIONS, UNBUILT_SDK_OPERATIONS, type UnbuiltGroup, type UnbuiltOperation } from './operations.js';
