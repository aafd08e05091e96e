/**
 * Measuring an uploaded image for the built-in screener: libvips (sharp) decodes it on libuv's
 * thread pool into bounded analysis copies — the pixel count capped from the header before any
 * decoding, the decode abandoned after `parseTimeoutMs` — and the pixel statistics (pixel-stats.ts,
 * run in the screener's worker pool) measure those copies. `isScreenshot` and
 * `screenshotTraitCount` are the screenshot rule on the measures. Every threshold is in
 * thresholds.ts.
 */
import type { Metadata, OutputInfo } from 'sharp';
import type { PixelStats, PixelTask, RawPixels } from './pixel-stats.js';
import type { ScreeningThresholds } from './thresholds.js';

// Loaded on the first image (libvips is large; a process that screens none never loads it).
// Each upload is screened once from a spool file deleted right after; libvips' operation cache
// would only keep those deleted files open and their decoded pixels resident.
let sharpModule: Promise<typeof import('sharp')> | undefined;
const loadSharp = () =>
  (sharpModule ??= import('sharp').then((loaded) => {
    loaded.default.cache(false);
    return loaded;
  }));

/** Why an image could not be measured (a subset of the screener's `UnreadableReason`). */
export type ImageUnreadableReason = 'wrongType' | 'decodeFailed' | 'tooManyPixels' | 'timeout';

/** What the pixel checks measured on a readable image (see thresholds.ts for each measure). */
export interface ImageMeasurements {
  width: number;
  height: number;
  channels: number;
  hasAlpha: boolean;
  /** EXIF IFD0 Make or Model is present and non-empty. */
  cameraExif: boolean;
  /** width × height (either orientation) is one of `screenSizes`. */
  screenSized: boolean;
  /** At least `minLongSide` × `minShortSide`. */
  bigEnough: boolean;
  /** Tile-percentile Laplacian energy on the sharpness copy; `null` when too small to measure. */
  sharpness: number | null;
  /** The `chromaPercentile` of per-pixel max(r,g,b) − min(r,g,b) on the analysis copy. */
  chroma: number;
  /** Share of the analysis copy covered by interior clipped-white areas that fade out like a highlight. */
  glareShare: number;
  /** Share of `flatTile`² tiles of the analysis copy whose pixels are all identical. */
  flatTileShare: number;
  /** How many screen-capture traits the image has (see `screenshotTraitCount`). */
  screenshotTraits: number;
}

/** Decode strictness: 'error' rejects truncated and corrupt image data but tolerates libjpeg's benign warnings. */
const FAIL_ON = 'error' as const;


/**
 * Decodes the image into bounded analysis copies and measures it; a string says why it is
 * unreadable. `measurePixels` computes the pixel statistics: the screener's worker pool, never
 * the main thread (pixel-stats.ts says why).
 */
export async function measureImage(
  filePath: string,
  expectedFormat: string,
  t: ScreeningThresholds,
  measurePixels: (task: PixelTask) => Promise<PixelStats>,
): Promise<ImageMeasurements | ImageUnreadableReason> {
  const { default: sharp } = await loadSharp();
  const options = { failOn: FAIL_ON, limitInputPixels: t.maxInputPixels } as const;
  const timeout = { seconds: Math.max(1, Math.ceil(t.parseTimeoutMs / 1000)) };
  let meta: Metadata;
  try {
    meta = await sharp(filePath, options).metadata();
  } catch (err) {
    return decodeFailure(err);
  }
  if (meta.format !== expectedFormat) return 'wrongType';
  if (!meta.width || !meta.height) return 'decodeFailed';
  if (meta.width * meta.height > t.maxInputPixels) return 'tooManyPixels';

  let analysis: { data: Buffer; info: OutputInfo };
  try {
    // Decodes every byte (so truncation and corrupt data fail here), shrinking on load.
    analysis = await sharp(filePath, options)
      .resize(t.analysisMaxSide, t.analysisMaxSide, { fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#808080' })
      .toColourspace('srgb')
      .raw()
      .timeout(timeout)
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    return decodeFailure(err);
  }
  const { data: rgb, info } = analysis;
  if (info.channels !== 3) return 'decodeFailed';
  const { width: aw, height: ah } = info;

  const { width, height } = meta;
  const long = Math.max(width, height);
  const short = Math.min(width, height);
  const bigEnough = long >= t.minLongSide && short >= t.minShortSide;

  let grey: RawPixels | undefined;
  if (Math.max(aw, ah) >= t.sharpnessLongSide) {
    const landscape = aw >= ah;
    const copy = await sharp(rgb, { raw: { width: aw, height: ah, channels: 3 } })
      .resize(landscape ? t.sharpnessLongSide : undefined, landscape ? undefined : t.sharpnessLongSide)
      .greyscale()
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (copy.info.channels !== 1) return 'decodeFailed';
    grey = { data: copy.data, width: copy.info.width, height: copy.info.height };
  }

  const stats = await measurePixels({ rgb: { data: rgb, width: aw, height: ah }, ...(grey ? { grey } : {}), thresholds: t });
  const cameraExif = hasCameraExif(meta.exif);
  const screenSized = t.screenSizes.some(([w, h]) => (w === width && h === height) || (w === height && h === width));
  const screenshotTraits = screenshotTraitCount({ screenSized, cameraExif, flatTileShare: stats.flatTileShare, hasAlpha: meta.hasAlpha }, t);

  return {
    width,
    height,
    channels: meta.channels,
    hasAlpha: meta.hasAlpha,
    cameraExif,
    screenSized,
    bigEnough,
    ...stats,
    screenshotTraits,
  };
}

function decodeFailure(err: unknown): ImageUnreadableReason {
  if (!(err instanceof Error)) return 'decodeFailed';
  if (/pixel limit/i.test(err.message)) return 'tooManyPixels';
  // sharp's own wording when `.timeout()` abandons a pipeline: "timeout: N% complete".
  if (/^timeout:/i.test(err.message)) return 'timeout';
  return 'decodeFailed';
}

/**
 * How many screen-capture traits an image has: (1) large perfectly flat regions, (2) screen-sized
 * dimensions without camera EXIF, (3) an alpha channel. See `isScreenshot` for the rule.
 */
export function screenshotTraitCount(
  m: { screenSized: boolean; cameraExif: boolean; flatTileShare: number; hasAlpha: boolean },
  t: ScreeningThresholds,
): number {
  return Number(m.flatTileShare >= t.minFlatTileShare) + Number(m.screenSized && !m.cameraExif) + Number(m.hasAlpha);
}

/**
 * The screenshot rule: at least `screenshotMinTraits` traits, one of which must be the flat
 * regions. Flat synthetic pixels are what a screen capture shows; the other two traits are
 * properties of the container that an innocent photo can pick up (an app strips EXIF and resizes
 * to 1600×900; a web page re-encodes through a canvas into an RGBA PNG), so they can support the
 * verdict but never make it without flat pixels. Likewise flat regions alone (a scan with
 * clipped white margins) are not enough.
 */
export function isScreenshot(m: ImageMeasurements, t: ScreeningThresholds): boolean {
  return m.flatTileShare >= t.minFlatTileShare && m.screenshotTraits >= t.screenshotMinTraits;
}

/** Whether raw EXIF (as sharp gives it, with or without the `Exif\0\0` prefix) names a camera: IFD0 Make or Model. */
export function hasCameraExif(exif: Buffer | undefined): boolean {
  if (!exif) return false;
  let tiff = exif;
  if (tiff.length >= 6 && tiff.toString('latin1', 0, 4) === 'Exif') tiff = tiff.subarray(6);
  if (tiff.length < 8) return false;
  const order = tiff.toString('latin1', 0, 2);
  if (order !== 'II' && order !== 'MM') return false;
  const le = order === 'II';
  const u16 = (at: number) => (le ? tiff.readUInt16LE(at) : tiff.readUInt16BE(at));
  const u32 = (at: number) => (le ? tiff.readUInt32LE(at) : tiff.readUInt32BE(at));
  if (u16(2) !== 42) return false;
  const ifd = u32(4);
  if (ifd + 2 > tiff.length) return false;
  const entries = u16(ifd);
  for (let e = 0; e < entries; e++) {
    const at = ifd + 2 + e * 12;
    if (at + 12 > tiff.length) return false;
    const tag = u16(at);
    if (tag !== 0x010f && tag !== 0x0110) continue; // Make, Model
    if (u16(at + 2) !== 2) continue; // ASCII
    const count = u32(at + 4);
    const start = count <= 4 ? at + 8 : u32(at + 8);
    if (start + count > tiff.length) continue;
    if (tiff.toString('latin1', start, start + count).replace(/[\0\s]+/g, '') !== '') return true;
  }
  return false;
}
