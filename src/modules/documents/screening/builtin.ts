/**
 * The built-in document screener: it decides the precheck errors of an uploaded JPEG, PNG or PDF
 * by decoding the bytes — sharp (libvips) for images, a structural parse plus pdf-lib for PDFs.
 * Pure: no database, no HTTP. Every threshold is in thresholds.ts; docs/document-screening.md
 * describes the checks.
 *
 * Bounds (decompression bombs; none of the decoding runs on the main thread's event loop):
 * - Images are decoded by libvips on libuv's thread pool (image-measures.ts). The pixel count is
 *   read from the header and capped (`maxInputPixels`) before any decoding; the file is shrunk on
 *   load and resized to a bounded analysis copy (≤ `analysisMaxSide`² RGB), so a full-resolution
 *   bitmap never reaches JS; the decode is abandoned after `parseTimeoutMs`. The pixel statistics
 *   on that copy run in the worker threads below (pixel-stats.ts), within `parseTimeoutMs`.
 * - PDFs are parsed in a worker thread (screening-worker.ts, a BoundedWorkerPool) with a heap limit
 *   (`parseHeapMb`) and a time limit (`parseTimeoutMs`), and their decoded structure streams are
 *   capped (`maxInflationRatio`, `maxDecodedBytes`).
 * - At most `concurrency` screenings run at once per screener; the rest wait their turn, each
 *   holding its request and its spooled file. The wait is bounded (`maxWaiting` in all, half of
 *   that per platform, `maxWaitMs` each), platforms take turns, and an upload that finds no room
 *   or waits too long is refused with 503 SERVICE_UNAVAILABLE (gate.ts, `screeningBusy`).
 * A file that breaches a bound is refused (422 DOCUMENT_REJECTED, dataNotReadable) with the bound
 * named in the message and `details.reason`.
 */
import { open } from 'node:fs/promises';
import { AppError } from '../../../platform/errors.js';
import { BoundedTaskError, BoundedWorkerPool } from '../../../platform/bounded-worker.js';
import { GateRefusal, Semaphore, screeningBusy } from './gate.js';
import { isScreenshot, measureImage, type ImageMeasurements } from './image-measures.js';
import type { PdfDefect } from './pdf.js';
import type { ScreeningAnswer, ScreeningTask } from './screening-worker.js';
import type { PixelTask } from './pixel-stats.js';
import {
  PRECHECK_ERRORS,
  type DocumentContentType,
  type DocumentScreener,
  type PrecheckError,
  type ScreeningSubject,
} from './screener.js';
import { SCREENING_THRESHOLDS, type ScreeningThresholds } from './thresholds.js';

/** Why a file could not be read at all; such a file reports only `dataNotReadable`. */
export type UnreadableReason =
  | 'empty'
  | 'tooLarge'
  | 'wrongType'
  | 'decodeFailed'
  | 'tooManyPixels'
  | 'timeout'
  | 'outOfMemory'
  | 'parserFailed'
  | `pdf:${PdfDefect}`;

/** The screener's full answer: the problems, and what they were decided from (for logs). */
export interface ScreeningReport {
  problems: PrecheckError[];
  unreadable?: UnreadableReason;
  measurements?: ImageMeasurements;
}

const SHARP_FORMAT: Record<Exclude<DocumentContentType, 'application/pdf'>, string> = {
  'image/jpeg': 'jpeg',
  'image/png': 'png',
};

/**
 * Where the screening worker's entry module (screening-worker.ts: PDF parses and pixel statistics)
 * is: beside this file in the sources, and its own entry of the bundle, `screening-worker.js` at the
 * bundle's root, in the build. There this module sits in an
 * entry at the root or in a chunk under `chunks/` (scripts/build.mjs), so the root is found from
 * wherever it is: any bundle (`dist/`, the tests' own) runs its own worker.
 */
const SCREENING_WORKER = import.meta.url.endsWith('.ts') ? new URL('./screening-worker.ts', import.meta.url) : bundleEntry('screening-worker.js');

function bundleEntry(name: string): URL {
  const here = new URL('.', import.meta.url);
  return new URL(name, here.pathname.endsWith('/chunks/') ? new URL('..', here) : here);
}

/** The unreadable reasons that are bounds, not judgements: the file was not (fully) decoded. */
function boundBreached(reason: UnreadableReason | undefined, t: ScreeningThresholds): string | undefined {
  switch (reason) {
    case 'pdf:decodedTooLarge':
      return `its compressed streams decode to more than ${t.maxDecodedBytes / 1024 / 1024} MiB`;
    case 'pdf:inflationRatio':
      return `a compressed stream expands more than ${t.maxInflationRatio}-fold (a decompression bomb)`;
    case 'tooManyPixels':
      return `the image declares more than ${t.maxInputPixels} pixels`;
    case 'timeout':
      return `decoding it took longer than ${t.parseTimeoutMs / 1000} s`;
    case 'outOfMemory':
      return `decoding it needed more than ${t.parseHeapMb} MB of memory`;
    default:
      return undefined;
  }
}

/**
 * A refusal that says which bound the file breached (decompression bombs and the like): 422
 * DOCUMENT_REJECTED with dataNotReadable, like any unreadable file, and the reason. Undefined
 * for every other report.
 */
export function boundRefusal(report: ScreeningReport, t: ScreeningThresholds): AppError | undefined {
  const why = boundBreached(report.unreadable, t);
  if (why === undefined) return undefined;
  return new AppError('DOCUMENT_REJECTED', `The file was refused unread: ${why}. Nothing was stored.`, {
    extra: { precheckErrors: report.problems },
    details: { reason: report.unreadable },
  });
}

export class BuiltInScreener implements DocumentScreener {
  readonly thresholds: ScreeningThresholds;
  readonly gate: Semaphore;
  /** PDF parses and pixel statistics: the screening work that would otherwise hold the event loop. */
  private readonly workers: BoundedWorkerPool<ScreeningTask, ScreeningAnswer<ScreeningTask>>;

  constructor(overrides: Partial<ScreeningThresholds> = {}) {
    this.thresholds = Object.freeze({ ...SCREENING_THRESHOLDS, ...overrides });
    if (this.thresholds.analysisMaxSide < this.thresholds.sharpnessLongSide) {
      throw new RangeError('analysisMaxSide must be at least sharpnessLongSide');
    }
    this.gate = new Semaphore(this.thresholds.concurrency, {
      maxWaiting: this.thresholds.maxWaiting,
      maxWaitingPerKey: Math.ceil(this.thresholds.maxWaiting / 2),
      maxWaitMs: this.thresholds.maxWaitMs,
    });
    this.workers = new BoundedWorkerPool(SCREENING_WORKER, {
      size: this.thresholds.concurrency,
      timeoutMs: this.thresholds.parseTimeoutMs,
      maxOldGenerationSizeMb: this.thresholds.parseHeapMb,
      maxYoungGenerationSizeMb: Math.max(4, Math.floor(this.thresholds.parseHeapMb / 8)),
    });
  }

  /** The problems found; a file that breaches a decoding bound is refused (throws 422) with the reason. */
  async screen(subject: ScreeningSubject): Promise<string[]> {
    const report = await this.inspect(subject);
    const refusal = boundRefusal(report, this.thresholds);
    if (refusal) throw refusal;
    return report.problems;
  }

  /** Ends the screening workers (the app's close). */
  close(): Promise<void> {
    return this.workers.close();
  }

  /** One task on the workers, answered with its own kind's answer (the worker answers each kind so). */
  private runTask<T extends ScreeningTask>(task: T): Promise<ScreeningAnswer<T>> {
    return this.workers.run(task) as Promise<ScreeningAnswer<T>>;
  }

  /**
   * `screen` with the reasons: why a file is unreadable, or the image measurements. Refused
   * (throws 503) when the queue has no room for it or its turn does not come in time.
   */
  async inspect(subject: ScreeningSubject): Promise<ScreeningReport> {
    try {
      return await this.gate.run(() => this.inspectNow(subject), subject.platformId);
    } catch (error) {
      throw error instanceof GateRefusal ? screeningBusy(error, this.thresholds) : error;
    }
  }

  private async inspectNow(subject: ScreeningSubject): Promise<ScreeningReport> {
    const t = this.thresholds;
    const { size, head } = await sniff(subject.filePath);
    if (size === 0) return unreadable('empty');
    if (size > t.maxFileBytes) return unreadable('tooLarge');
    if (!magicMatches(subject.contentType, head)) return unreadable('wrongType');

    if (subject.contentType === 'application/pdf') {
      let defect: PdfDefect | null;
      try {
        const limits = { maxDecodedBytes: t.maxDecodedBytes, maxInflationRatio: t.maxInflationRatio, inflationGraceBytes: t.inflationGraceBytes };
        defect = await this.runTask({ kind: 'pdf', filePath: subject.filePath, limits });
      } catch (error) {
        return unreadable(breachedBound(error));
      }
      return defect === null ? { problems: [] } : unreadable(`pdf:${defect}`);
    }

    let measured: Awaited<ReturnType<typeof measureImage>>;
    try {
      measured = await measureImage(subject.filePath, SHARP_FORMAT[subject.contentType], t, (task: PixelTask) => this.runTask({ kind: 'pixels', ...task }));
    } catch (error) {
      return unreadable(breachedBound(error));
    }
    if (typeof measured === 'string') return unreadable(measured);
    return { problems: judge(measured, t), measurements: measured };
  }
}

/** The bound a worker task breached, as the reason the file is unreadable; any other error is rethrown. */
function breachedBound(error: unknown): UnreadableReason {
  if (!(error instanceof BoundedTaskError)) throw error;
  return error.bound === 'timeout' ? 'timeout' : error.bound === 'memory' ? 'outOfMemory' : 'parserFailed';
}

function unreadable(reason: UnreadableReason): ScreeningReport {
  return { problems: ['dataNotReadable'], unreadable: reason };
}

/** The decisions, in `PRECHECK_ERRORS` order, each at most once. */
export function judge(m: ImageMeasurements, t: ScreeningThresholds): PrecheckError[] {
  const found = new Set<PrecheckError>();
  if (!m.bigEnough || m.sharpness === null || m.sharpness < t.minSharpness) found.add('dataNotReadable');
  if (isScreenshot(m, t)) found.add('screenshot');
  if (m.channels <= 2 || m.chroma < t.minChroma) found.add('grayscale');
  if (m.glareShare > t.maxGlareShare) found.add('glare');
  return PRECHECK_ERRORS.filter((e) => found.has(e));
}

async function sniff(filePath: string): Promise<{ size: number; head: Buffer }> {
  const handle = await open(filePath, 'r');
  try {
    const { size } = await handle.stat();
    const head = Buffer.alloc(8);
    const { bytesRead } = await handle.read(head, 0, 8, 0);
    return { size, head: head.subarray(0, bytesRead) };
  } finally {
    await handle.close();
  }
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The declared type's magic bytes open the file (checked before any decoder sees it). */
function magicMatches(contentType: DocumentContentType, head: Buffer): boolean {
  switch (contentType) {
    case 'image/jpeg':
      return head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff;
    case 'image/png':
      return head.length >= 8 && head.equals(PNG_SIGNATURE);
    case 'application/pdf':
      return head.toString('latin1', 0, 5) === '%PDF-';
  }
}
