/**
 * The pixel statistics of an image's analysis copies (decoded by image-measures.ts): focus,
 * colour, flat tiles and glare. Each is a JavaScript loop over up to `analysisMaxSide`² pixels,
 * and glare probes outward from every edge of every clipped area: a hostile image (a checkerboard
 * of clipped pixels on a bright ground) made them ~0.4 s of one thread. So they never run on the
 * main thread: the screener sends the copies to its worker pool (screening-worker.ts), bounded in
 * time like a PDF parse. Pure: no I/O. Every threshold is in thresholds.ts.
 */
import type { ScreeningThresholds } from './thresholds.js';

/** A grey or RGB copy of the image, as raw 8-bit samples. */
export interface RawPixels {
  data: Uint8Array;
  width: number;
  height: number;
}

/** What the worker measures: the RGB analysis copy, and the grey sharpness copy when the image is big enough to judge focus. */
export interface PixelTask {
  rgb: RawPixels;
  grey?: RawPixels;
  thresholds: ScreeningThresholds;
}

export interface PixelStats {
  /** Tile-percentile Laplacian energy on the sharpness copy; `null` without one. */
  sharpness: number | null;
  chroma: number;
  glareShare: number;
  flatTileShare: number;
}

export function measurePixels({ rgb, grey, thresholds: t }: PixelTask): PixelStats {
  return {
    sharpness: grey ? tileSharpness(grey.data, grey.width, grey.height, t.sharpnessTile, t.sharpnessPercentile) : null,
    chroma: chromaPercentile(rgb.data, t.chromaPercentile),
    glareShare: glareShare(rgb.data, rgb.width, rgb.height, t),
    flatTileShare: flatShare(rgb.data, rgb.width, rgb.height, t.flatTile),
  };
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
function chromaPercentile(rgb: Uint8Array, p: number): number {
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
function tileSharpness(grey: Uint8Array, w: number, h: number, tile: number, p: number): number {
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
function flatShare(rgb: Uint8Array, w: number, h: number, tile: number): number {
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
export function glareShare(rgb: Uint8Array, w: number, h: number, t: ScreeningThresholds): number {
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

