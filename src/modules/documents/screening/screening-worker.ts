/**
 * The screener's worker (run by BuiltInScreener through a BoundedWorkerPool): the work of a
 * screening that would hold the main thread's event loop. A PDF task reads the spooled file and
 * answers its structural defect, or null when the PDF is readable; a pixel task answers an
 * image's pixel statistics (pixel-stats.ts). Never imported; loaded by URL as a worker's entry
 * module (its name is the bundle's entry, `dist/screening-worker.js`).
 */
import { readFile } from 'node:fs/promises';
import { serveTasks } from '../../../platform/bounded-worker.js';
import { pdfDefect, type DecodeLimits, type PdfDefect } from './pdf.js';
import { measurePixels, type PixelStats, type PixelTask } from './pixel-stats.js';

export interface PdfTask {
  kind: 'pdf';
  filePath: string;
  limits: DecodeLimits;
}

export type ScreeningTask = PdfTask | ({ kind: 'pixels' } & PixelTask);

/** What each kind of task answers. */
export type ScreeningAnswer<T extends ScreeningTask> = T extends PdfTask ? PdfDefect | null : PixelStats;

serveTasks<ScreeningTask, PdfDefect | null | PixelStats>(async (task) => {
  if (task.kind === 'pixels') return measurePixels(task);
  return (await pdfDefect(await readFile(task.filePath), task.limits)) ?? null;
});
