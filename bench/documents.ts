/**
 * Upload bodies for the document scenarios of `npm run bench`: a camera-like card photo (from
 * the test fixtures) enlarged with sensor grain to a chosen size, and a multipart body that
 * carries it with a unique JPEG comment per request, so no two uploads share a digest and every
 * one is really stored.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { cardPhotoJpeg } from '../test/helpers/document-files.js';

/** A screenable JPEG of at least `minBytes` and at most `maxBytes`, found by raising the width. */
export async function grainyCardJpeg(minBytes: number, maxBytes: number): Promise<Buffer> {
  const card = await cardPhotoJpeg();
  const { width: cardWidth, height: cardHeight } = await sharp(card).metadata();
  for (let width = 1600; width <= 6000; width += 100) {
    const height = Math.round((cardHeight! * width) / cardWidth!);
    const grain = await sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).png().toBuffer();
    for (const quality of [97, 95, 92, 90, 85]) {
      const jpeg = await sharp(card).resize(width).composite([{ input: grain, blend: 'soft-light' }]).jpeg({ quality }).toBuffer();
      if (jpeg.length >= minBytes && jpeg.length <= maxBytes) return jpeg;
      if (jpeg.length < minBytes) break;
    }
  }
  throw new Error(`no grainy card JPEG between ${minBytes} and ${maxBytes} bytes`);
}

/** Builds, per call, a POST /documents body whose JPEG differs from every other one. */
export function uploadBodies(holder: string, jpeg: Buffer): { contentType: string; next: () => Buffer } {
  const boundary = `----corridorbench${randomBytes(6).toString('hex')}`;
  const text = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    text('documentHolder', holder) +
      text('documentType', 'PASSPORT') +
      text('country', 'US') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="passport.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const soi = jpeg.subarray(0, 2);
  const rest = jpeg.subarray(2);
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    next: () => {
      // A COM segment (0xFFFE, length 2 + 16) right after SOI: valid JPEG, new SHA-256.
      const comment = Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 18]), randomBytes(16)]);
      return Buffer.concat([head, soi, comment, rest, tail]);
    },
  };
}
