/**
 * The built-in screener at the edges of its documented numbers (documents/README.md,
 * screening/thresholds.ts): the file-size bound, the PDF decode caps a default screener applies,
 * the smallest readable image, and a grey scan with a slight tint. Each number is written out
 * here, not read from SCREENING_THRESHOLDS, so a changed bound fails rather than follows.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuiltInScreener } from '../../src/modules/documents/screening/builtin.js';
import { pdfDefect } from '../../src/modules/documents/screening/pdf.js';
import type { DocumentContentType, ScreeningSubject } from '../../src/modules/documents/screening/screener.js';
import { SCREENING_THRESHOLDS } from '../../src/modules/documents/screening/thresholds.js';
import { bytesOfSize, cardPhotoJpeg, grayscaleJpeg, pdfDecompressionBomb, pdfWithObjectStreamBombs, validPdf } from '../helpers/document-files.js';

const MIB = 1024 * 1024;

let dir: string;
let seq = 0;
const screener = new BuiltInScreener();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'corridor-screening-edges-'));
});
afterAll(async () => {
  await screener.close();
  await rm(dir, { recursive: true, force: true });
});

async function subjectOf(bytes: Buffer, contentType: DocumentContentType): Promise<ScreeningSubject> {
  const filePath = join(dir, `upload-${++seq}`);
  await writeFile(filePath, bytes);
  return { filePath, contentType, sizeBytes: bytes.length, sha256: '0'.repeat(64), fileName: `upload-${seq}`, documentType: 'NATIONAL_ID', country: 'US' };
}

const inspect = async (bytes: Buffer, contentType: DocumentContentType, using = screener) => using.inspect(await subjectOf(bytes, contentType));

/** The card photo resized to exactly width × height (stretched if need be), as a PNG. */
async function cardAt(width: number, height: number): Promise<Buffer> {
  return sharp(await cardPhotoJpeg()).resize(width, height, { fit: 'fill' }).png().toBuffer();
}

describe('the file-size bound (10 MiB, as the upload limit)', () => {
  it('screens a file of exactly 10 MiB and refuses one byte more unread', async () => {
    const exact = await inspect(bytesOfSize(10 * MIB, 'image/jpeg'), 'image/jpeg');
    // Not a real JPEG, so unreadable, but decoded: it was within the bound.
    expect(exact).toEqual({ problems: ['dataNotReadable'], unreadable: 'decodeFailed' });
    const over = await inspect(bytesOfSize(10 * MIB + 1, 'image/jpeg'), 'image/jpeg');
    expect(over).toEqual({ problems: ['dataNotReadable'], unreadable: 'tooLarge' });
  });
});

/** A readable one-page PDF (classic xref) that also holds one FlateDecode object stream with `object` as its object 5. */
function pdfWithObjectStream(object: string): Buffer {
  const header = '5 0 ';
  const stream = deflateSync(Buffer.from(`${header}${object}`, 'latin1'), { level: 9 });
  const objects = [
    Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
    Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>'),
    Buffer.from('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>'),
    Buffer.concat([Buffer.from(`<< /Type /ObjStm /N 1 /First ${header.length} /Filter /FlateDecode /Length ${stream.length} >>\nstream\n`), stream, Buffer.from('\nendstream')]),
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n')];
  let length = parts[0]!.length;
  const offsets = objects.map((object, i) => {
    const at = length;
    const bytes = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), object, Buffer.from('\nendobj\n')]);
    parts.push(bytes);
    length += bytes.length;
    return at;
  });
  const xref = ['xref', `0 ${objects.length + 1}`, '0000000000 65535 f ', ...offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n `)];
  return Buffer.concat([...parts, Buffer.from(`${xref.join('\n')}\ntrailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`, 'latin1')]);
}

describe("a default screener's PDF decode caps", () => {
  it('stops a stream expanding more than 100-fold after its first MiB, naming the ratio', async () => {
    // ~16 KB inflating to 16 MiB (1000-fold): past 1 MiB it breaches 100-fold before 4 MiB in all.
    await expect(screener.screen(await subjectOf(pdfWithObjectStreamBombs(1, 1), 'application/pdf'))).rejects.toMatchObject({
      code: 'DOCUMENT_REJECTED',
      message: expect.stringContaining('expands more than 100-fold'),
      extra: { precheckErrors: ['dataNotReadable'] },
      details: { reason: 'pdf:inflationRatio' },
    });
    // The same caps when pdf.ts is called without limits.
    expect(await pdfDefect(pdfWithObjectStreamBombs(1, 1))).toBe('inflationRatio');
  });

  it('lets a small stream expand more than 100-fold: the ratio counts only past the first MiB', async () => {
    // One object stream whose single object, an array of 100,000 zeros (~200 KB), deflates to a few hundred bytes.
    const pdf = pdfWithObjectStream(`[${'0 '.repeat(100_000)}]`);
    expect(pdf.length).toBeLessThan(4096);
    expect(await pdfDefect(pdf)).toBeUndefined();
    expect(await screener.screen(await subjectOf(pdf, 'application/pdf'))).toEqual([]);
  });

  it('stops the structure streams at 4 MiB decoded in all', async () => {
    expect(await pdfDefect(await pdfDecompressionBomb())).toBe('decodedTooLarge');
  });
});

/** A readable one-page PDF (classic xref) whose body also holds `filler` small array objects: pdf-lib builds an object for each. */
function manyObjectsPdf(filler: number): Buffer {
  const objects = ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [3 0 R] /Count 1 >>', '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>'];
  let body = '%PDF-1.7\n';
  const offsets = objects.map((object, i) => {
    const at = body.length;
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return at;
  });
  body += Array.from({ length: filler }, (_, i) => `${i + 4} 0 obj\n[${i + 4} 0 R]\nendobj\n`).join('');
  const xref = ['xref', `0 ${objects.length + 1}`, '0000000000 65535 f ', ...offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n `)];
  return Buffer.from(`${body}${xref.join('\n')}\ntrailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${body.length}\n%%EOF\n`, 'latin1');
}

describe('the PDF structure check', () => {
  it('wants %%EOF within the last 1 KiB: trailing bytes past that are a damaged file', async () => {
    const pdf = await validPdf();
    expect(await pdfDefect(Buffer.concat([pdf, Buffer.alloc(512, 0x0a)]))).toBeUndefined();
    expect(await pdfDefect(Buffer.concat([pdf, Buffer.alloc(2048, 0x0a)]))).toBe('noEof');
  });
});

describe("a PDF parse's heap bound", () => {
  it('refuses a PDF whose parse outgrows the worker heap, naming the bound; a small one parses under the same bound', async () => {
    const tight = new BuiltInScreener({ parseHeapMb: 16 });
    try {
      expect(await tight.screen(await subjectOf(await validPdf(), 'application/pdf'))).toEqual([]);
      // ~1.8 MB of 60,000 small objects: far more than 16 MB of pdf-lib objects.
      await expect(tight.screen(await subjectOf(manyObjectsPdf(60_000), 'application/pdf'))).rejects.toMatchObject({
        code: 'DOCUMENT_REJECTED',
        message: expect.stringContaining('needed more than 16 MB of memory'),
        extra: { precheckErrors: ['dataNotReadable'] },
        details: { reason: 'outOfMemory' },
      });
    } finally {
      await tight.close();
    }
  });
});

describe('the declared type', () => {
  it("is checked by magic bytes before any decoder sees the file: JPEG bytes declared a PDF never reach the PDF parser", async () => {
    expect(await inspect(await cardPhotoJpeg(), 'application/pdf')).toEqual({ problems: ['dataNotReadable'], unreadable: 'wrongType' });
    expect(await inspect(await validPdf(), 'image/png')).toEqual({ problems: ['dataNotReadable'], unreadable: 'wrongType' });
  });
});

describe('the smallest readable image (long side 640, short side 400)', () => {
  it('accepts a sharp colour image of exactly 640 × 400, in either orientation', async () => {
    for (const [w, h] of [[640, 400], [400, 640]] as const) {
      const report = await inspect(await cardAt(w, h), 'image/png');
      expect(report.measurements).toMatchObject({ width: w, height: h, bigEnough: true });
      expect(report.measurements!.sharpness).not.toBeNull();
      expect(report.problems).toEqual([]);
    }
  });

  it('calls one pixel less on either side unreadable', async () => {
    for (const [w, h] of [[639, 400], [640, 399], [1600, 399], [399, 1600]] as const) {
      const report = await inspect(await cardAt(w, h), 'image/png');
      expect(report.measurements).toMatchObject({ width: w, height: h, bigEnough: false });
      expect(report.problems).toEqual(['dataNotReadable']);
    }
  });
});

describe('glare', () => {
  it('ignores a blown-out area cut by the top or bottom edge of the frame, as by a side edge', async () => {
    // A large soft highlight centred on the frame's top or bottom edge: its clipped core touches
    // that edge only, never a side. Inside the frame, the same highlight is glare.
    const card = await cardPhotoJpeg();
    const highlight = (cy: number) =>
      Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="1000">
        <defs><radialGradient id="g" cx="0.5" cy="0.5" r="0.5">
          <stop offset="0" stop-color="#fff" stop-opacity="1"/><stop offset="0.55" stop-color="#fff" stop-opacity="1"/>
          <stop offset="1" stop-color="#fff" stop-opacity="0"/>
        </radialGradient></defs>
        <ellipse cx="800" cy="${cy}" rx="450" ry="300" fill="url(#g)"/>
      </svg>`);
    for (const cy of [0, 1000]) {
      const photo = await sharp(card).composite([{ input: highlight(cy) }]).removeAlpha().jpeg({ quality: 90 }).toBuffer();
      const report = await inspect(photo, 'image/jpeg');
      expect(report.measurements!.glareShare).toBeLessThan(0.005);
      expect(report.problems).toEqual([]);
    }
    const inside = await sharp(card).composite([{ input: highlight(500) }]).removeAlpha().jpeg({ quality: 90 }).toBuffer();
    expect((await inspect(inside, 'image/jpeg')).problems).toEqual(['glare']);
  });
});

describe('colour', () => {
  it('calls a grey scan with a slight tint grayscale (chroma 8, under 20)', async () => {
    // The desaturated card with 8 grey levels more blue: every pixel's chroma is at most 8.
    const tinted = await sharp(await grayscaleJpeg()).linear([1, 1, 1], [0, 0, 8]).png().toBuffer();
    const report = await inspect(tinted, 'image/png');
    expect(report.measurements!.chroma).toBeGreaterThan(4);
    expect(report.measurements!.chroma).toBeLessThan(20);
    expect(report.problems).toEqual(['grayscale']);
  });
});

describe('the documented bounds', () => {
  it('are the numbers documents/README.md and docs/document-screening.md give', () => {
    // Untrusted bytes are decoded under these; raising one weakens a bound no other test can time.
    expect(SCREENING_THRESHOLDS).toMatchObject({
      maxFileBytes: 10 * MIB,
      maxInputPixels: 120_000_000,
      maxDecodedBytes: 4 * MIB,
      maxInflationRatio: 100,
      inflationGraceBytes: 1 * MIB,
      parseTimeoutMs: 15_000,
      parseHeapMb: 96,
      concurrency: 2,
      maxWaiting: 64,
      maxWaitMs: 30_000,
      analysisMaxSide: 1024,
    });
  });
});
