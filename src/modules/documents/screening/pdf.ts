/**
 * The built-in screener's structural PDF check. PDFs get no pixel checks: a PDF is readable when
 * its file structure is intact and a real parser opens it with at least one page.
 *
 * 1. The file starts with `%PDF-`.
 * 2. `%%EOF` occurs within the last 1 KiB (a truncated upload loses it).
 * 3. The last `startxref` before that `%%EOF` holds a byte offset inside the file, and at that
 *    offset is either a classic `xref` table or an indirect object (`N G obj`) whose dictionary
 *    is `/Type /XRef` — an xref stream (PDF 1.5+).
 * 4. pdf-lib's `PDFDocument.load` succeeds with `throwOnInvalidObject` (so a garbled body
 *    fails), the document is not encrypted (the screener cannot read an encrypted document's
 *    content, and neither can a reviewer without the password), and it has ≥ 1 page.
 *
 * Decompression bombs: loading decodes the structure streams (object streams and xref
 * streams, any filter). Two caps, checked before each growth of a decoder's output buffer:
 * - a stream's decoded size may exceed its encoded size at most `maxInflationRatio`-fold once
 *   past `inflationGraceBytes` (Apache POI's zip-bomb rule): a bomb is caught after about a
 *   megabyte of decoding, whatever its size → `inflationRatio`;
 * - every byte the decoders allocate, over all streams, counts against `maxDecodedBytes`
 *   → `decodedTooLarge`.
 * Content and image streams are never decoded here. Time and heap are bounded by the worker this
 * runs in (screening-worker.ts); these caps bound the buffers, which a worker's heap limit does not
 * cover.
 */
import type { PDFDocument } from 'pdf-lib';
import { SCREENING_THRESHOLDS } from './thresholds.js';

/** Why a PDF is unreadable, for logs; `undefined` when it is readable. */
export type PdfDefect =
  | 'noHeader'
  | 'noEof'
  | 'noStartxref'
  | 'badStartxref'
  | 'encrypted'
  | 'unparseable'
  | 'noPages'
  | 'decodedTooLarge'
  | 'inflationRatio';

const EOF_WINDOW = 1024;
/** How far before `%%EOF` to look for `startxref` and its number. */
const STARTXREF_WINDOW = 1024;

function isWhite(byte: number | undefined): boolean {
  // PDF whitespace: NUL, TAB, LF, FF, CR, SPACE.
  return byte === 0x00 || byte === 0x09 || byte === 0x0a || byte === 0x0c || byte === 0x0d || byte === 0x20;
}

export interface DecodeLimits {
  maxDecodedBytes: number;
  maxInflationRatio: number;
  inflationGraceBytes: number;
}

const DEFAULT_LIMITS: DecodeLimits = {
  maxDecodedBytes: SCREENING_THRESHOLDS.maxDecodedBytes,
  maxInflationRatio: SCREENING_THRESHOLDS.maxInflationRatio,
  inflationGraceBytes: SCREENING_THRESHOLDS.inflationGraceBytes,
};

/** The caps of the PDF being loaded and what its decoders may still allocate (one load at a time per thread). */
let decodeBudget: (DecodeLimits & { left: number; exceeded?: 'decodedTooLarge' | 'inflationRatio' }) | undefined;
let decoderCapped: Promise<void> | undefined;

/**
 * Makes pdf-lib's decoders (all subclasses of its DecodeStream: Flate, LZW, ASCII85, ASCIIHex,
 * RunLength) ask the budget before growing their output buffer. pdf-lib grows it by doubling
 * from a power of two; the size it is about to allocate is computed the same way and charged
 * before the allocation happens, so the cap holds for the memory, not only the data.
 */
function capDecoders(): Promise<void> {
  return (decoderCapped ??= import('pdf-lib/cjs/core/streams/DecodeStream.js').then((loaded) => {
    // A CommonJS module: Node hands its exports object as the default, tsx and vite unwrap it.
    const exported = loaded.default as unknown as { default?: { prototype: object }; prototype: object };
    const DecodeStream = exported.default ?? exported;
    const proto = DecodeStream.prototype as { ensureBuffer(requested: number): Uint8Array };
    const grow = proto.ensureBuffer;
    type Decoder = { buffer: Uint8Array; minBufferLength: number; stream?: { length?: unknown; bufferLength?: unknown } };
    proto.ensureBuffer = function (this: Decoder, requested: number) {
      const budget = decodeBudget;
      if (budget && requested > this.buffer.byteLength) {
        // The encoded input: a slice of the file, or the output of the previous filter in a chain.
        const source = this.stream?.length ?? this.stream?.bufferLength;
        if (typeof source === 'number' && requested > budget.inflationGraceBytes && requested > source * budget.maxInflationRatio) {
          budget.exceeded = 'inflationRatio';
        } else {
          let size = this.minBufferLength;
          while (size < requested) size *= 2;
          budget.left -= size;
          if (budget.left < 0) budget.exceeded = 'decodedTooLarge';
        }
        if (budget.exceeded) throw new RangeError(`decoded PDF streams breach a cap (${budget.exceeded})`);
      }
      return grow.call(this, requested);
    };
  }));
}

/**
 * The structural defect of `bytes` as a PDF, or `undefined` when it is a readable PDF with
 * pages. Decoding its structure streams stays within `limits`.
 */
export async function pdfDefect(bytes: Buffer, limits: DecodeLimits = DEFAULT_LIMITS): Promise<PdfDefect | undefined> {
  if (bytes.length < 8 || bytes.toString('latin1', 0, 5) !== '%PDF-') return 'noHeader';

  const tailStart = Math.max(0, bytes.length - EOF_WINDOW);
  const eofAt = bytes.lastIndexOf('%%EOF', bytes.length, 'latin1');
  if (eofAt < tailStart) return 'noEof';

  const windowStart = Math.max(0, eofAt - STARTXREF_WINDOW);
  const tail = bytes.toString('latin1', windowStart, eofAt);
  const match = /startxref\s+(\d+)\s*$/.exec(tail);
  if (!match) return 'noStartxref';
  const offset = Number(match[1]);
  if (!Number.isSafeInteger(offset) || offset >= windowStart + (match.index ?? 0)) return 'badStartxref';
  if (!pointsAtXref(bytes, offset)) return 'badStartxref';

  let doc: PDFDocument;
  await capDecoders();
  const budget: NonNullable<typeof decodeBudget> = { ...limits, left: limits.maxDecodedBytes };
  decodeBudget = budget;
  try {
    // ignoreEncryption only so that encryption is reported as such (pdf-lib's own error class does
    // not survive its ES5 build for instanceof); an encrypted PDF is still unreadable below.
    // Loaded on the first PDF: it is large. A CommonJS module: Node names its exports beside the
    // default, the bundle in dist/ (esbuild) hands only the default, vite only the names.
    const loaded = await import('pdf-lib');
    const { PDFDocument: Pdf } = loaded.PDFDocument ? loaded : loaded.default;
    doc = await Pdf.load(bytes, { ignoreEncryption: true, throwOnInvalidObject: true, updateMetadata: false });
  } catch {
    // pdf-lib may catch the cap's error and fail later on the object it could not decode.
    return budget.exceeded ?? 'unparseable';
  } finally {
    decodeBudget = undefined;
  }
  if (budget.exceeded) return budget.exceeded;
  if (doc.isEncrypted) return 'encrypted';
  try {
    return doc.getPageCount() >= 1 ? undefined : 'noPages';
  } catch {
    // A broken page tree throws while counting.
    return 'unparseable';
  }
}

/** The problems a PDF has, as precheck error names: `[]` or `['dataNotReadable']`. */
export async function pdfProblems(bytes: Buffer): Promise<'dataNotReadable'[]> {
  return (await pdfDefect(bytes)) === undefined ? [] : ['dataNotReadable'];
}

/** Whether `offset` starts a classic xref table or an xref-stream object. */
function pointsAtXref(bytes: Buffer, offset: number): boolean {
  let at = offset;
  // Tolerate whitespace before the keyword, as readers do.
  while (at < bytes.length && isWhite(bytes[at])) at++;
  const head = bytes.toString('latin1', at, Math.min(bytes.length, at + 1024));
  if (/^xref\s+\d+\s+\d+\s/.test(head)) return true;
  const obj = /^\d+\s+\d+\s+obj\s*<</.exec(head);
  if (!obj) return false;
  // The stream's dictionary precedes the `stream` keyword; it must say it is a cross-reference stream.
  const dictEnd = head.indexOf('stream', obj[0].length);
  const dict = dictEnd === -1 ? head : head.slice(0, dictEnd);
  return /\/Type\s*\/XRef\b/.test(dict);
}
