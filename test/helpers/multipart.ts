import { randomBytes } from 'node:crypto';
import { existsSync, symlinkSync } from 'node:fs';
import { vi } from 'vitest';
import { UploadSpool } from '../../src/platform/http/multipart.js';
import type { App } from '../../src/app.js';
import { BASE, type TestPlatform } from './context.js';

export type Part =
  | { name: string; value: string }
  | { name: string; filename: string; contentType?: string; data: Buffer };

/** A multipart/form-data body built by hand, so tests control every header of every part. */
export function multipartBody(parts: Part[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----corridor${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const lines = [`--${boundary}`];
    if ('data' in part) {
      lines.push(`Content-Disposition: form-data; name="${part.name}"; filename="${part.filename}"`);
      if (part.contentType !== undefined) lines.push(`Content-Type: ${part.contentType}`);
    } else {
      lines.push(`Content-Disposition: form-data; name="${part.name}"`);
    }
    chunks.push(Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), 'data' in part ? part.data : Buffer.from(part.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** POST /customers/bulk/csv with `csv` as the file part, as an integrator's upload sends it. */
export function postCsvImport(app: App, platform: TestPlatform, csv: string) {
  const { payload, headers } = multipartBody([{ name: 'file', filename: 'customers.csv', contentType: 'text/csv', data: Buffer.from(csv) }]);
  return app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: platform.auth, ...headers }, payload });
}

/** Text parts from an object, skipping undefined values. */
export function textParts(fields: Record<string, string | undefined>): Part[] {
  return Object.entries(fields)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, value]) => ({ name, value }));
}

export async function sendDocumentForm(app: App, platform: TestPlatform, method: 'POST' | 'PUT', path: string, parts: Part[]) {
  const { payload, headers } = multipartBody(parts);
  return app.inject({ method, url: `${BASE}${path}`, headers: { ...headers, authorization: platform.auth }, payload });
}

/** Whether this machine has /dev/full, which answers every write with ENOSPC as a disk with no room left does. */
export const HAS_FULL_DISK = existsSync('/dev/full');

/**
 * Makes every file the upload spool opens from now on a link to /dev/full (removing the link
 * leaves the device alone): the spool's disk is full. Restore the returned spy when done.
 */
export function spoolToFullDisk() {
  const newPath = UploadSpool.prototype.newPath;
  return vi.spyOn(UploadSpool.prototype, 'newPath').mockImplementation(function (this: UploadSpool) {
    const path = newPath.call(this);
    symlinkSync('/dev/full', path);
    return path;
  });
}
