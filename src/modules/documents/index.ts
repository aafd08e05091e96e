// The documents module's public face: what app.ts wires and what other modules may use.
export { DOCUMENT_CATEGORIES, DOCUMENT_TYPES, TWO_SIDED_TYPES, type DocumentCategory, type DocumentType } from './catalogue.js';
export { documentRoutes } from './routes.js';
export { MAX_DOCUMENT_NUMBER_LENGTH, type Document } from './schemas.js';
export { documentsOfHolders, recordReviewReading, recordReviewVerdict, type ReviewLookup } from './service.js';
export { DocumentIntake } from './intake.js';
export { getDocument } from './service.js';
