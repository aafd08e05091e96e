/**
 * Measuring an uploaded image for the built-in screener: libvips (sharp) decodes it on libuv's
 * thread pool into bounded analysis copies — the pixel count capped from the header before any
 * decoding, the decode abandoned after `parseTimeoutMs` — and the pixel statistics below measure
 * those copies. `isScreenshot` and `screenshotTraitCount` are the screenshot rule on the measures.
 * Every threshold is in thresholds.ts.
 */
import type { Metadata, OutputInfo } from 'sharp';
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


/** Decodes the image into bounded analysis copies and measures it; a string says why it is unreadable. */
export async function measureImage(
  filePath: string,
  expectedFormat: string,
  t: ScreeningThresholds,
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

  let sharpness: number | null = null;
  if (Math.max(aw, ah) >= t.sharpnessLongSide) {
    const landscape = aw >= ah;
    const grey = await sharp(rgb, { raw: { width: aw, height: ah, channels: 3 } })
      .resize(landscape ? t.sharpnessLongSide : undefined, landscape ? undefined : t.sharpnessLongSide)
      .greyscale()
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (grey.info.channels !== 1) return 'decodeFailed';
    sharpness = tileSharpness(grey.data, grey.info.width, grey.info.height, t.sharpnessTile, t.sharpnessPercentile);
  }

  const cameraExif = hasCameraExif(meta.exif);
  const screenSized = t.screenSizes.some(([w, h]) => (w === width && h === height) || (w === height && h === width));
  const flatTileShare = flatShare(rgb, aw, ah, t.flatTile);
  const screenshotTraits = screenshotTraitCount({ screenSized, cameraExif, flatTileShare, hasAlpha: meta.hasAlpha }, t);

  return {
    width,
    height,
    channels: meta.channels,
    hasAlpha: meta.hasAlpha,
    cameraExif,
    screenSized,
    bigEnough,
    sharpness,
    chroma: chromaPercentile(rgb, t.chromaPercentile),
    glareShare: glareShare(rgb, aw, ah, t),
    flatTileShare,
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

function percentileOfHistogram(hist: Uint32Array, total: number, p: number): number {
  const rank = Math.floor(p * (total - 1));
  let seen = 0;
  for (let v = 0; v < hist.length; v++) {
    seen += hist[v]!;
    if (seen > rank) return v;
  }
  return hist.length - 1;
}

/** The p-th percentile of per-pixel chroma, max(r,g,b) − min(r,g,b), of 3-channel pixels. */
function chromaPercentile(rgb: Buffer, p: number): number {
  const hist = new Uint32Array(256);
  for (let i = 0; i < rgb.length; i += 3) {
    const r = rgb[i]!;
    const g = rgb[i + 1]!;
    const b = rgb[i + 2]!;
    const max = r > g ? (r > b ? r : b) : g > b ? g : b;
    const min = r < g ? (r < b ? r : b) : g < b ? g : b;
    hist[max - min]!++;
  }
  return percentileOfHistogram(hist, rgb.length / 3, p);
}

/**
 * Focus: the 4-neighbour Laplacian's mean energy (mean of squares) per `tile`² tile of the grey
 * sharpness copy, then the p-th percentile over tiles. Taking the sharpest tiles (where text and
 * edges are) makes the measure indifferent to how much of the frame is plain background.
 */
function tileSharpness(grey: Buffer, w: number, h: number, tile: number, p: number): number {
  const tilesX = Math.floor((w - 2) / tile);
  const tilesY = Math.floor((h - 2) / tile);
  if (tilesX < 1 || tilesY < 1) return 0;
  const energies = new Float64Array(tilesX * tilesY);
  for (let ty = 0; ty < tilesY; ty++) {
    for (let tx = 0; tx < tilesX; tx++) {
      let sum = 0;
      for (let y = 1 + ty * tile, yEnd = y + tile; y < yEnd; y++) {
        let i = y * w + 1 + tx * tile;
        for (const iEnd = i + tile; i < iEnd; i++) {
          const lap = grey[i - 1]! + grey[i + 1]! + grey[i - w]! + grey[i + w]! - 4 * grey[i]!;
          sum += lap * lap;
        }
      }
      energies[ty * tilesX + tx] = sum / (tile * tile);
    }
  }
  energies.sort();
  return energies[Math.floor(p * (energies.length - 1))]!;
}

/** Share of `tile`² tiles (whole tiles only) in which every pixel has exactly the same RGB. */
function flatShare(rgb: Buffer, w: number, h: number, tile: number): number {
  const tilesX = Math.floor(w / tile);
  const tilesY = Math.floor(h / tile);
  if (tilesX < 1 || tilesY < 1) return 0;
  let flat = 0;
  for (let ty = 0; ty < tilesY; ty++) {
    tiles: for (let tx = 0; tx < tilesX; tx++) {
      const first = (ty * tile * w + tx * tile) * 3;
      const r = rgb[first];
      const g = rgb[first + 1];
      const b = rgb[first + 2];
      for (let y = ty * tile; y < (ty + 1) * tile; y++) {
        for (let i = (y * w + tx * tile) * 3, end = i + tile * 3; i < end; i += 3) {
          if (rgb[i] !== r || rgb[i + 1] !== g || rgb[i + 2] !== b) continue tiles;
        }
      }
      flat++;
    }
  }
  return flat / (tilesX * tilesY);
}

/**
 * Glare: the share of the analysis copy covered by blown-out highlights. A pixel is clipped when
 * every channel is ≥ `clippedLevel`. Clipped areas connected to the image border are ignored —
 * they are the white page, scanner lid or a white card background cropped tight, not a highlight
 * on the document. Each remaining clipped area counts as glare only when it fades out: a
 * specular highlight is ringed by a bright halo, while a white surface (paper, a UI panel) ends
 * abruptly at print or at its edge. The test looks `glareProbe` pixels outward from every edge
 * of the area; the edge is soft when the luma there is ≥ `glareHaloLuma`, and the area is glare
 * when at least `glareMinSoftEdgeShare` of its edges are soft.
 */
export function glareShare(rgb: Buffer, w: number, h: number, t: ScreeningThresholds): number {
  const n = w * h;
  const level = t.clippedLevel;
  // 0 = not clipped, 1 = clipped (unvisited), 2 = clipped and border-connected, 3 = clipped, labelled
  const state = new Uint8Array(n);
  let count = 0;
  for (let p = 0, i = 0; p < n; p++, i += 3) {
    if (rgb[i]! >= level && rgb[i + 1]! >= level && rgb[i + 2]! >= level) {
      state[p] = 1;
      count++;
    }
  }
  if (count === 0) return 0;
  const queue = new Int32Array(count);
  let head = 0;
  let tail = 0;
  const visit = (p: number, mark: number) => {
    if (state[p] === 1) {
      state[p] = mark;
      queue[tail++] = p;
    }
  };
  for (let x = 0; x < w; x++) {
    visit(x, 2);
    visit((h - 1) * w + x, 2);
  }
  for (let y = 0; y < h; y++) {
    visit(y * w, 2);
    visit(y * w + w - 1, 2);
  }
  while (head < tail) {
    const p = queue[head++]!;
    const x = p % w;
    if (x > 0) visit(p - 1, 2);
    if (x < w - 1) visit(p + 1, 2);
    if (p >= w) visit(p - w, 2);
    if (p < n - w) visit(p + w, 2);
  }

  const luma = (p: number) => 0.299 * rgb[p * 3]! + 0.587 * rgb[p * 3 + 1]! + 0.114 * rgb[p * 3 + 2]!;
  const probe = t.glareProbe;
  let glare = 0;
  for (let start = 0; start < n; start++) {
    if (state[start] !== 1) continue;
    head = tail = 0;
    visit(start, 3);
    let edges = 0;
    let soft = 0;
    // Where one step from (x, y) along (dx, dy) leaves the area: the edge is soft when every
    // pixel 1…probe steps out (clamped to the image) is bright.
    const edge = (x: number, y: number, dx: number, dy: number) => {
      edges++;
      for (let k = 1; k <= probe; k++) {
        const px = Math.min(w - 1, Math.max(0, x + dx * k));
        const py = Math.min(h - 1, Math.max(0, y + dy * k));
        if (luma(py * w + px) < t.glareHaloLuma) return;
      }
      soft++;
    };
    while (head < tail) {
      const p = queue[head++]!;
      const x = p % w;
      const y = (p - x) / w;
      // Interior areas never touch the border, so all four neighbours exist.
      if (state[p - 1] === 0) edge(x, y, -1, 0);
      else visit(p - 1, 3);
      if (state[p + 1] === 0) edge(x, y, 1, 0);
      else visit(p + 1, 3);
      if (state[p - w] === 0) edge(x, y, 0, -1);
      else visit(p - w, 3);
      if (state[p + w] === 0) edge(x, y, 0, 1);
      else visit(p + w, 3);
    }
    if (edges > 0 && soft / edges >= t.glareMinSoftEdgeShare) glare += tail;
  }
  return glare / n;
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
