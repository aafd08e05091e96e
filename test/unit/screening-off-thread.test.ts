/**
 * An image's pixel statistics are the screener's heaviest JavaScript: a hostile image (isolated
 * clipped pixels on a bright ground, so every edge of every clipped area is probed) kept the
 * main thread's event loop for ~0.4 s per upload, back to back under concurrent uploads. They run
 * in the screener's worker pool, bounded in time like a PDF parse.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BuiltInScreener } from '../../src/modules/documents/screening/builtin.js';
import type { DocumentContentType, ScreeningSubject } from '../../src/modules/documents/screening/screener.js';
import { AppError } from '../../src/platform/errors.js';
import { BoundedWorkerPool } from '../../src/platform/bounded-worker.js';
import { cardPhotoJpeg } from '../helpers/document-files.js';

let dir: string;
let seq = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'corridor-screening-threads-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function subjectOf(bytes: Buffer, contentType: DocumentContentType): Promise<ScreeningSubject> {
  const filePath = join(dir, `upload-${++seq}`);
  await writeFile(filePath, bytes);
  return { filePath, contentType, sizeBytes: bytes.length, sha256: '0'.repeat(64), fileName: `upload-${seq}`, documentType: 'NATIONAL_ID', country: 'US' };
}

/** A 1024² PNG of isolated clipped pixels on a bright, unclipped ground: the glare measure's worst case. */
async function glareCheckerboardPng(): Promise<Buffer> {
  const side = 1024;
  const rgb = Buffer.alloc(side * side * 3, 245);
  for (let y = 1; y < side - 1; y++) {
    for (let x = 1; x < side - 1; x++) if ((x + y) % 2 === 0) rgb.fill(255, (y * side + x) * 3, (y * side + x) * 3 + 3);
  }
  return sharp(rgb, { raw: { width: side, height: side, channels: 3 } }).png().toBuffer();
}

describe('image screening off the main thread', () => {
  it("measures an image's pixels in the screener's worker pool", async () => {
    const screener = new BuiltInScreener();
    const run = vi.spyOn(BoundedWorkerPool.prototype, 'run');
    try {
      expect(await screener.screen(await subjectOf(await cardPhotoJpeg(), 'image/jpeg'))).toEqual([]);
      const kinds = run.mock.calls.map(([task]) => (task as { kind: string }).kind);
      expect(kinds).toEqual(['pixels']);
      const task = run.mock.calls[0]![0] as { rgb: { data: Uint8Array; width: number; height: number }; grey?: { width: number } };
      expect(task.rgb.data.length).toBe(task.rgb.width * task.rgb.height * 3);
      expect(Math.max(task.rgb.width, task.rgb.height)).toBeLessThanOrEqual(screener.thresholds.analysisMaxSide);
      expect(task.grey?.width).toBe(screener.thresholds.sharpnessLongSide);
    } finally {
      run.mockRestore();
      await screener.close();
    }
  });

  it('refuses an image whose pixel statistics overrun the parse time bound, naming the bound', async () => {
    // 1 ms for the statistics (libvips' decode keeps its whole-second floor): the checkerboard's take far longer.
    const screener = new BuiltInScreener({ parseTimeoutMs: 1 });
    try {
      const refusal = await screener.screen(await subjectOf(await glareCheckerboardPng(), 'image/png')).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(AppError);
      expect((refusal as AppError).code).toBe('DOCUMENT_REJECTED');
      expect((refusal as AppError).details).toEqual({ reason: 'timeout' });
    } finally {
      await screener.close();
    }
  });
});
