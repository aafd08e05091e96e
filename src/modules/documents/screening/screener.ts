/**
 * The document-screening provider seam (spec §4.1 rules 4–6): every accepted upload is screened
 * before anything is stored. A screener answers the problems it found, verbatim; none means the
 * file passes. Implementations: the built-in screener (decodes the bytes), the sandbox triggers,
 * and an HTTP adapter to an external vendor.
 */
export const DOCUMENT_CONTENT_TYPES = ['application/pdf', 'image/jpeg', 'image/png'] as const;
export type DocumentContentType = (typeof DOCUMENT_CONTENT_TYPES)[number];

/**
 * Precheck error names Corridor itself can answer. The first four are the spec's (§2.3); the
 * rest are ours, in the same style. An external provider's names pass through unchanged.
 */
export const PRECHECK_ERRORS = [
  'dataNotReadable',
  'screenshot',
  'grayscale',
  'documentExpired',
  'glare',
  'cornersNotVisible',
  'retouched',
] as const;
export type PrecheckError = (typeof PRECHECK_ERRORS)[number];

/** One uploaded file and the metadata it was sent with; the bytes are in a local file. */
export interface ScreeningSubject {
  filePath: string;
  contentType: DocumentContentType;
  sizeBytes: number;
  sha256: string;
  fileName: string;
  documentType: string;
  country: string;
  side?: 'FRONT' | 'BACK';
  documentNumber?: string;
  issuingAuthority?: string;
  /** The uploading platform: the built-in screener's queue takes platforms in turn. Never sent to a provider. */
  platformId?: string;
}

export interface DocumentScreener {
  /** The problems found, one entry each, in a stable order; `[]` accepts the file. */
  screen(subject: ScreeningSubject): Promise<string[]>;
}
