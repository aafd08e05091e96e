import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuiltInScreener } from '../../src/modules/documents/screening/builtin.js';
import { Semaphore } from '../../src/modules/documents/screening/gate.js';
import { hasCameraExif } from '../../src/modules/documents/screening/image-measures.js';
import { pdfDefect, pdfProblems } from '../../src/modules/documents/screening/pdf.js';
import type { DocumentContentType, ScreeningSubject } from '../../src/modules/documents/screening/screener.js';
import { SCREENING_THRESHOLDS } from '../../src/modules/documents/screening/thresholds.js';
import {
  blurredJpeg,
  bytesOfSize,
  cardPhotoJpeg,
  cardPhotoPng,
  corruptPdf,
  decompressionBombPng,
  pdfDecompressionBomb,
  pdfWithObjectStreamBombs,
  encryptedPdf,
  glareJpeg,
  grayscaleJpeg,
  grayscaleSingleChannelJpeg,
  heicImage,
  pdfWithBadStartxref,
  pdfWithGarbledBody,
  pdfWithoutEof,
  screenCapturePng,
  tiffImage,
  tinyJpeg,
  truncatedJpeg,
  validPdf,
  validPdfClassicXref,
  webpImage,
} from '../helpers/document-files.js';

let dir: string;
let seq = 0;
const screener = new BuiltInScreener();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'corridor-screening-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function subjectOf(bytes: Buffer, contentType: DocumentContentType): Promise<ScreeningSubject> {
  const filePath = join(dir, `upload-${++seq}`);
  await writeFile(filePath, bytes);
  return {
    filePath,
    contentType,
    sizeBytes: bytes.length,
    sha256: '0'.repeat(64),
    fileName: `upload-${seq}`,
    documentType: 'NATIONAL_ID',
    country: 'US',
  };
}

async function screen(bytes: Buffer, contentType: DocumentContentType, using = screener): Promise<string[]> {
  return using.screen(await subjectOf(bytes, contentType));
}

describe('built-in screener: generated fixtures', () => {
  it.each([
    { name: 'card photo JPEG', fixture: cardPhotoJpeg, type: 'image/jpeg', expected: [] },
    { name: 'card photo PNG', fixture: cardPhotoPng, type: 'image/png', expected: [] },
    { name: 'desaturated 3-channel JPEG', fixture: grayscaleJpeg, type: 'image/jpeg', expected: ['grayscale'] },
    { name: 'single-channel JPEG', fixture: grayscaleSingleChannelJpeg, type: 'image/jpeg', expected: ['grayscale'] },
    { name: 'heavily blurred JPEG', fixture: blurredJpeg, type: 'image/jpeg', expected: ['dataNotReadable'] },
    { name: 'tiny JPEG', fixture: tinyJpeg, type: 'image/jpeg', expected: ['dataNotReadable'] },
    { name: 'JPEG with a blown-out highlight', fixture: glareJpeg, type: 'image/jpeg', expected: ['glare'] },
    { name: 'JPEG cut in half', fixture: truncatedJpeg, type: 'image/jpeg', expected: ['dataNotReadable'] },
    { name: 'UI screen capture', fixture: screenCapturePng, type: 'image/png', expected: ['screenshot'] },
    { name: 'PDF (xref stream)', fixture: validPdf, type: 'application/pdf', expected: [] },
    { name: 'PDF (xref table)', fixture: validPdfClassicXref, type: 'application/pdf', expected: [] },
    { name: 'PDF cut off', fixture: corruptPdf, type: 'application/pdf', expected: ['dataNotReadable'] },
    { name: 'PDF without %%EOF', fixture: pdfWithoutEof, type: 'application/pdf', expected: ['dataNotReadable'] },
    { name: 'PDF whose startxref points into the body', fixture: pdfWithBadStartxref, type: 'application/pdf', expected: ['dataNotReadable'] },
    { name: 'PDF with a garbled page tree', fixture: pdfWithGarbledBody, type: 'application/pdf', expected: ['dataNotReadable'] },
    { name: 'encrypted PDF', fixture: encryptedPdf, type: 'application/pdf', expected: ['dataNotReadable'] },
  ] as const)('$name → $expected', async ({ fixture, type, expected }) => {
    expect(await screen(await fixture(), type)).toEqual(expected);
  });

  it.each([
    { name: 'decompression bomb PNG (144 MP)', fixture: decompressionBombPng, type: 'image/png', reason: 'tooManyPixels' },
    { name: 'decompression bomb PDF (~1 GiB of object streams)', fixture: pdfDecompressionBomb, type: 'application/pdf', reason: 'pdf:decodedTooLarge' },
  ] as const)('$name is refused unread, naming the bound', async ({ fixture, type, reason }) => {
    await expect(screen(await fixture(), type)).rejects.toMatchObject({
      code: 'DOCUMENT_REJECTED',
      extra: { precheckErrors: ['dataNotReadable'] },
      details: { reason },
    });
  });
});

describe('built-in screener: bytes that are not the declared type', () => {
  it.each([
    ['PNG bytes declared image/jpeg', cardPhotoPng, 'image/jpeg'],
    ['JPEG bytes declared image/png', cardPhotoJpeg, 'image/png'],
    ['JPEG bytes declared application/pdf', cardPhotoJpeg, 'application/pdf'],
    ['PDF bytes declared image/png', validPdf, 'image/png'],
    ['PDF bytes declared image/jpeg', validPdf, 'image/jpeg'],
    ['HEIF bytes declared image/jpeg', heicImage, 'image/jpeg'],
    ['WebP bytes declared image/png', webpImage, 'image/png'],
    ['TIFF bytes declared image/jpeg', tiffImage, 'image/jpeg'],
  ] as const)('%s → dataNotReadable', async (_name, fixture, contentType) => {
    expect(await screen(await fixture(), contentType)).toEqual(['dataNotReadable']);
  });

  it.each(['image/jpeg', 'image/png', 'application/pdf'] as const)('garbage and empty files declared %s', async (contentType) => {
    expect(await screen(randomBytes(4096), contentType)).toEqual(['dataNotReadable']);
    expect(await screen(Buffer.alloc(0), contentType)).toEqual(['dataNotReadable']);
    // Right magic bytes, nothing behind them.
    expect(await screen(bytesOfSize(4096, contentType), contentType)).toEqual(['dataNotReadable']);
  });

  it('says why a file is unreadable', async () => {
    const reason = async (bytes: Buffer, type: DocumentContentType) =>
      (await screener.inspect(await subjectOf(bytes, type))).unreadable;
    expect(await reason(Buffer.alloc(0), 'image/png')).toBe('empty');
    expect(await reason(await cardPhotoPng(), 'image/jpeg')).toBe('wrongType');
    expect(await reason(await truncatedJpeg(), 'image/jpeg')).toBe('decodeFailed');
    expect(await reason(await decompressionBombPng(), 'image/png')).toBe('tooManyPixels');
    expect(await reason(await corruptPdf(), 'application/pdf')).toBe('pdf:noEof');
    expect(await reason(await pdfWithBadStartxref(), 'application/pdf')).toBe('pdf:badStartxref');
    expect(await reason(await pdfWithGarbledBody(), 'application/pdf')).toBe('pdf:unparseable');
    expect(await reason(await encryptedPdf(), 'application/pdf')).toBe('pdf:encrypted');
    expect(await reason(await cardPhotoJpeg(), 'image/jpeg')).toBeUndefined();
  });

  it('refuses a file over the size limit without decoding it', async () => {
    const report = await screener.inspect(
      await subjectOf(bytesOfSize(SCREENING_THRESHOLDS.maxFileBytes + 1, 'image/jpeg'), 'image/jpeg'),
    );
    expect(report).toEqual({ problems: ['dataNotReadable'], unreadable: 'tooLarge' });
  });

  it('applies the pixel limit before decoding (a lower limit rejects the 1.6 MP card photo)', async () => {
    const strict = new BuiltInScreener({ maxInputPixels: 1_000_000 });
    await expect(screen(await cardPhotoJpeg(), 'image/jpeg', strict)).rejects.toMatchObject({ code: 'DOCUMENT_REJECTED', details: { reason: 'tooManyPixels' } });
  });
});

describe('built-in screener: combined verdicts', () => {
  it('judges a readable but blurry image for colour too, in PRECHECK_ERRORS order', async () => {
    const blurryGrey = await sharp(await blurredJpeg()).greyscale().toColourspace('srgb').jpeg().toBuffer();
    expect(await screen(blurryGrey, 'image/jpeg')).toEqual(['dataNotReadable', 'grayscale']);
  });

  it('reports a grey screen capture as screenshot then grayscale', async () => {
    const greyCapture = await sharp(await screenCapturePng()).greyscale().toColourspace('srgb').ensureAlpha().png().toBuffer();
    expect(await screen(greyCapture, 'image/png')).toEqual(['screenshot', 'grayscale']);
  });

  it('does not call a photo a screenshot for container traits alone (RGBA PNG at 1920×1080, no EXIF)', async () => {
    const photo = await sharp(await cardPhotoJpeg()).resize(1920, 1080, { fit: 'fill' }).ensureAlpha().png().toBuffer();
    const report = await screener.inspect(await subjectOf(photo, 'image/png'));
    expect(report.measurements?.screenshotTraits).toBe(2);
    expect(report.problems).toEqual([]);
  });

  it('does not call a white margin glare when it touches the border (a scan on a white lid)', async () => {
    const card = await sharp(await cardPhotoJpeg()).resize(1200, 750).toBuffer();
    const scan = await sharp(card)
      .extend({ top: 200, bottom: 200, left: 200, right: 200, background: '#ffffff' })
      .jpeg({ quality: 90 })
      .toBuffer();
    expect(await screen(scan, 'image/jpeg')).toEqual([]);
  });

  it('measures the fixtures with margin on both sides of every threshold', async () => {
    const t = SCREENING_THRESHOLDS;
    const m = async (bytes: Buffer, type: DocumentContentType) =>
      (await screener.inspect(await subjectOf(bytes, type))).measurements!;
    const card = await m(await cardPhotoJpeg(), 'image/jpeg');
    expect(card.sharpness!).toBeGreaterThan(t.minSharpness * 10);
    expect(card.chroma).toBeGreaterThan(t.minChroma * 3);
    expect(card.glareShare).toBeLessThan(t.maxGlareShare / 10);
    expect(card.flatTileShare).toBeLessThan(t.minFlatTileShare / 10);
    expect(card.cameraExif).toBe(true);
    expect((await m(await blurredJpeg(), 'image/jpeg')).sharpness!).toBeLessThan(t.minSharpness / 3);
    expect((await m(await grayscaleJpeg(), 'image/jpeg')).chroma).toBeLessThan(t.minChroma / 3);
    expect((await m(await glareJpeg(), 'image/jpeg')).glareShare).toBeGreaterThan(t.maxGlareShare * 2);
    const capture = await m(await screenCapturePng(), 'image/png');
    expect(capture.flatTileShare).toBeGreaterThan(t.minFlatTileShare * 1.5);
    expect(capture).toMatchObject({ screenSized: true, cameraExif: false, hasAlpha: true, screenshotTraits: 3 });
  });
});

describe('built-in screener: concurrency', () => {
  it('screens 20 uploads at once, at most `concurrency` at a time, each with its own verdict', async () => {
    const local = new BuiltInScreener();
    const cases = [
      [cardPhotoJpeg, 'image/jpeg', []],
      [glareJpeg, 'image/jpeg', ['glare']],
      [grayscaleJpeg, 'image/jpeg', ['grayscale']],
      [screenCapturePng, 'image/png', ['screenshot']],
      [validPdf, 'application/pdf', []],
    ] as const;
    const subjects = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const [fixture, type] = cases[i % cases.length]!;
        return subjectOf(await fixture(), type);
      }),
    );
    const results = await Promise.all(subjects.map((s) => local.screen(s)));
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => cases[i % cases.length]![2]));
    expect(local.gate.peak).toBe(SCREENING_THRESHOLDS.concurrency);
    expect(local.gate.running).toBe(0);
    expect(local.gate.queued).toBe(0);
  });

  it('the semaphore runs tasks in arrival order and frees its slot when a task fails', async () => {
    const gate = new Semaphore(1);
    const order: number[] = [];
    const failing = gate.run(async () => {
      order.push(1);
      throw new Error('boom');
    });
    const next = gate.run(async () => {
      order.push(2);
      return 'ok';
    });
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ok');
    expect(order).toEqual([1, 2]);
    expect(gate.peak).toBe(1);
    expect(gate.running).toBe(0);
  });
});

describe('screening helpers', () => {
  it('finds a camera in EXIF Make/Model only', async () => {
    expect(hasCameraExif((await sharp(await cardPhotoJpeg()).metadata()).exif)).toBe(true);
    expect(hasCameraExif(undefined)).toBe(false);
    const noCamera = await sharp(await tinyJpeg()).withExif({ IFD0: { Copyright: 'someone' } }).toBuffer();
    expect(hasCameraExif((await sharp(noCamera).metadata()).exif)).toBe(false);
    expect(hasCameraExif(Buffer.from('Exif\0\0garbage'))).toBe(false);
  });

  it('caps what a PDF\'s structure streams decode to: in all, and per stream by expansion ratio', async () => {
    const limits = { maxDecodedBytes: 4 * 1024 * 1024, maxInflationRatio: 100, inflationGraceBytes: 1024 * 1024 };
    // ~260 KB inflating to 256 MiB (1000-fold, but 100-fold allows 26 MB): the total cap stops it.
    expect(await pdfDefect(await pdfDecompressionBomb(), limits)).toBe('decodedTooLarge');
    // ~16 KB inflating to 16 MiB: past the 1 MiB grace it breaches 100-fold before the total cap.
    expect(await pdfDefect(pdfWithObjectStreamBombs(1, 1), limits)).toBe('inflationRatio');
    // Without the ratio rule, the same file meets the total cap.
    expect(await pdfDefect(pdfWithObjectStreamBombs(1, 1), { ...limits, maxInflationRatio: 10_000 })).toBe('decodedTooLarge');
    // A real PDF's structure streams fit easily.
    expect(await pdfDefect(await validPdf(), limits)).toBeUndefined();
  });

  it('pdfProblems answers [] or [dataNotReadable]', async () => {
    expect(await pdfProblems(await validPdf())).toEqual([]);
    expect(await pdfProblems(await corruptPdf())).toEqual(['dataNotReadable']);
    expect(await pdfDefect(Buffer.from('%PDF-1.7\n%%EOF\n'))).toBe('noStartxref');
    expect(await pdfDefect(Buffer.from('hello'))).toBe('noHeader');
  });

  it('keeps every threshold in one frozen object', () => {
    expect(Object.isFrozen(SCREENING_THRESHOLDS)).toBe(true);
    expect(Object.isFrozen(SCREENING_THRESHOLDS.screenSizes)).toBe(true);
    expect(() => new BuiltInScreener({ analysisMaxSide: 320 })).toThrow(RangeError);
  });
});
