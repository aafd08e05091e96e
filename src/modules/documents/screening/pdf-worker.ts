/**
 * The PDF check's worker (run by BuiltInScreener through a BoundedWorkerPool): it reads the
 * spooled file and answers its structural defect, or null when the PDF is readable. Never
 * imported; loaded by URL as a worker's entry module.
 */
import { readFile } from 'node:fs/promises';
import { serveTasks } from '../../../platform/bounded-worker.js';
import { pdfDefect, type DecodeLimits, type PdfDefect } from './pdf.js';

export interface PdfTask {
  filePath: string;
  limits: DecodeLimits;
}

serveTasks<PdfTask, PdfDefect | null>(async ({ filePath, limits }) => (await pdfDefect(await readFile(filePath), limits)) ?? null);
