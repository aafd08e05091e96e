// The invitations module's public face: the routes app.ts registers and the event group it catalogues.
export { invitationRoutes } from './routes.js';
export { INVITATION_CLAIMED, INVITATION_EVENTS, UmaInvitation } from './schemas.js';
