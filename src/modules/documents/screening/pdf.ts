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
 */
import type { PDFDocument } from 'pdf-lib';

/** Why a PDF is unreadable, for logs; `undefined` when it is readable. */
export type PdfDefect =
  | 'noHeader'
  | 'noEof'
  | 'noStartxref'
  | 'badStartxref'
  | 'encrypted'
  | 'unparseable'
  | 'noPages';

const EOF_WINDOW = 1024;
/** How far before `%%EOF` to look for `startxref` and its number. */
const STARTXREF_WINDOW = 1024;

function isWhite(byte: number | undefined): boolean {
  // PDF whitespace: NUL, TAB, LF, FF, CR, SPACE.
  return byte === 0x00 || byte === 0x09 || byte === 0x0a || byte === 0x0c || byte === 0x0d || byte === 0x20;
}

/** The structural defect of `bytes` as a PDF, or `undefined` when it is a readable PDF with pages. */
export async function pdfDefect(bytes: Buffer): Promise<PdfDefect | undefined> {
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
  try {
    // ignoreEncryption only so that encryption is reported as such (pdf-lib's own error class does
    // not survive its ES5 build for instanceof); an encrypted PDF is still unreadable below.
    const { PDFDocument: Pdf } = await import('pdf-lib'); // loaded on the first PDF: it is large
    doc = await Pdf.load(bytes, { ignoreEncryption: true, throwOnInvalidObject: true, updateMetadata: false });
  } catch {
    return 'unparseable';
  }
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
