/**
 * Every number the built-in document screener decides with, in one place
 * (docs/document-screening.md explains each check).
 *
 * Pixel measures are taken on bounded copies, never on the full-resolution image:
 * - the ANALYSIS copy: the image shrunk (on load, then resized) to fit inside
 *   `analysisMaxSide` × `analysisMaxSide`, never enlarged, as 8-bit sRGB (alpha flattened onto
 *   mid-grey);
 * - the SHARPNESS copy: the analysis copy in grey, resized so its long side is exactly
 *   `sharpnessLongSide`.
 *
 * "Fixtures" are the generated files of test/helpers/document-files.ts (a 1600×1000 camera-like
 * photo of an ID card and variants of it, and a 1920×1080 UI screen capture). The value each
 * fixture measures is noted beside the threshold that judges it, so the margin is visible.
 */
export interface ScreeningThresholds {
  readonly maxFileBytes: number;
  readonly maxInputPixels: number;
  readonly minLongSide: number;
  readonly minShortSide: number;
  readonly analysisMaxSide: number;
  readonly sharpnessLongSide: number;
  readonly sharpnessTile: number;
  readonly sharpnessPercentile: number;
  readonly minSharpness: number;
  readonly chromaPercentile: number;
  readonly minChroma: number;
  readonly clippedLevel: number;
  readonly glareProbe: number;
  readonly glareHaloLuma: number;
  readonly glareMinSoftEdgeShare: number;
  readonly maxGlareShare: number;
  readonly flatTile: number;
  readonly minFlatTileShare: number;
  readonly screenshotMinTraits: number;
  readonly screenSizes: readonly (readonly [number, number])[];
  readonly concurrency: number;
  readonly maxWaiting: number;
  readonly maxWaitMs: number;
  readonly maxDecodedBytes: number;
  readonly maxInflationRatio: number;
  readonly inflationGraceBytes: number;
  readonly parseTimeoutMs: number;
  readonly parseHeapMb: number;
}

/** Common display and phone screen resolutions (width × height; either orientation matches). */
const SCREEN_SIZES: readonly (readonly [number, number])[] = ([
  // Desktop and laptop displays.
  [1024, 768], [1280, 720], [1280, 800], [1280, 1024], [1360, 768], [1366, 768], [1440, 900],
  [1536, 864], [1600, 900], [1680, 1050], [1920, 1080], [1920, 1200], [2048, 1152], [2256, 1504],
  [2560, 1080], [2560, 1440], [2560, 1600], [2736, 1824], [2880, 1800], [3024, 1964], [3440, 1440],
  [3456, 2234], [3840, 1600], [3840, 2160], [5120, 2880],
  // iPhones (portrait).
  [640, 1136], [750, 1334], [828, 1792], [1080, 1920], [1125, 2436], [1170, 2532], [1179, 2556],
  [1206, 2622], [1242, 2208], [1242, 2688], [1284, 2778], [1290, 2796], [1320, 2868],
  // Android phones (portrait).
  [720, 1280], [720, 1520], [720, 1600], [1080, 2160], [1080, 2220], [1080, 2280], [1080, 2340],
  [1080, 2400], [1080, 2408], [1080, 2412], [1440, 2560], [1440, 2960], [1440, 3040], [1440, 3088],
  [1440, 3120], [1440, 3200],
  // Tablets (portrait).
  [768, 1024], [1536, 2048], [1620, 2160], [1640, 2360], [1668, 2224], [1668, 2388], [2048, 2732],
  [1200, 1920], [1600, 2560], [1752, 2800],
] satisfies [number, number][]).map((size) => Object.freeze(size) as readonly [number, number]);

export const SCREENING_THRESHOLDS: ScreeningThresholds = Object.freeze({
  // ---- Readability: size limits ----

  /**
   * Largest file screened at all, in bytes (10 MiB, the upload limit, enforced again here as
   * defence in depth: the memory bounds below assume it). Larger → dataNotReadable.
   */
  maxFileBytes: 10 * 1024 * 1024,
  /**
   * Decompression-bomb guard: most pixels (width × height, from the header, checked before
   * decoding) an image may declare. 120 MP admits a 108 MP phone sensor's photo; a 10 MiB PNG of
   * a single colour could otherwise declare gigapixels. More → dataNotReadable.
   */
  maxInputPixels: 120_000_000,
  /**
   * Smallest readable image: long side ≥ 640 px and short side ≥ 400 px. An ID-1 card scanned
   * at 200 dpi is 674×425 px, where an MRZ character is ~16 px tall — about the least an OCR
   * engine or a reviewer reads reliably. Smaller → dataNotReadable. Fixtures: tiny 240×150
   * (rejected), every other image 1600×1000 or 1920×1080.
   */
  minLongSide: 640,
  minShortSide: 400,

  // ---- Analysis copies ----

  /**
   * The analysis copy fits inside 1024×1024 (≤ 3 MB of RGB per screening): enough pixels that
   * camera noise survives for the flat-tile test, few enough to stay fast. Also bounds memory: a
   * full-resolution bitmap never reaches JavaScript.
   */
  analysisMaxSide: 1024,
  /**
   * The sharpness copy's long side. Blur is judged relative to the frame (a card fills a similar
   * share of any photo of it, so its text is a similar fraction of the long side), and fixing the
   * size makes one threshold fit every resolution. Equal to `minLongSide`, so an accepted image
   * is only ever shrunk to it, never enlarged.
   */
  sharpnessLongSide: 640,

  // ---- Focus → dataNotReadable ----

  /** Tile edge (px of the sharpness copy) over which the Laplacian energy is averaged. */
  sharpnessTile: 16,
  /**
   * Which tile energy is the image's sharpness: the 95th percentile, i.e. the sharpest 5% of
   * the frame — where text and edges are — so a plain background or flat UI panels do not make
   * a sharp image look blurry.
   */
  sharpnessPercentile: 0.95,
  /**
   * Least sharpness (mean squared 4-neighbour Laplacian, grey levels², at that percentile) of a
   * readable image. Calibrated on the card photo blurred with a Gaussian of σ px (at 1600 px):
   * σ 0.5 → 15387, 2 → 2708, 3 → 623, 4 → 158 (MRZ still legible), 5 → 63 (MRZ barely legible,
   * small print not), 6 → 32, 9 → 9. Noise of σ grey levels (as left after shrinking to 640 px)
   * alone scores ≈ 20·σ², about 10–80 for phone photos, so the threshold sits above that. Fixtures: card photo 15387, card PNG 15326,
   * greyscale 15343, glare 13578, screen capture 13368; blurred 20 (rejected).
   */
  minSharpness: 120,

  // ---- Colour → grayscale ----

  /**
   * Which per-pixel chroma, max(r,g,b) − min(r,g,b), stands for the image: the 99th percentile,
   * so the colourful 1% (portrait, flag, bands, hologram) decides, not the pale card background.
   */
  chromaPercentile: 0.99,
  /**
   * Least chroma (grey levels) at that percentile of an image in colour; below → grayscale.
   * A desaturated image measures 0–2 (JPEG rounding), a grey scan with colour noise or a slight
   * tint ~5–15; any colour document with a portrait or coloured print is far above (skin alone is
   * 40+). 1- and 2-channel images are grayscale without measuring. Fixtures: card photo 116,
   * card PNG 122, glare 113, blurred 110, tiny 112, screen capture 181; greyscale 0 (rejected).
   */
  minChroma: 20,

  // ---- Blown-out highlights → glare ----

  /**
   * A pixel is clipped when every channel is ≥ 250: blown out to (near) white. 250 rather than
   * 255 because JPEG ringing and shrinking soften a clipped patch by a few levels.
   */
  clippedLevel: 250,
  /**
   * A clipped area's edge is soft when the `glareProbe` pixels just outside it all have luma ≥
   * `glareHaloLuma` — the bright halo of a highlight — and hard otherwise (print, a card edge,
   * the desk). 3 px of the analysis copy ≈ 0.3% of its long side.
   */
  glareProbe: 3,
  glareHaloLuma: 200,
  /**
   * A clipped area not touching the border is a highlight when at least half its edges are soft;
   * a white surface (paper, a white UI panel) is bounded by print and edges and measures low.
   * Fixtures: the glare highlight 1.00; the screen capture's white list panel (34% of the
   * frame, enclosed by a light-grey page) 0.21, so it is not glare.
   */
  glareMinSoftEdgeShare: 0.5,
  /**
   * Most of the analysis copy that highlights may cover: 2% ≈ 4% of a card that fills half the
   * frame, about two fields' worth. More → glare. Small specular glints stay under it. Fixtures:
   * glare 5.57%; card photo, card PNG and greyscale 0.08%, screen capture 0.28%, blurred and
   * tiny 0%.
   */
  maxGlareShare: 0.02,

  // ---- Screen-capture traits → screenshot ----

  /**
   * Tile edge (px of the analysis copy) for the flat-region trait: a tile is flat when all its
   * pixels are exactly equal (every channel). 16 px of a 1024 px copy is ~60 px of a phone photo,
   * where sensor noise and lighting gradients always leave some variation.
   */
  flatTile: 16,
  /**
   * Share of flat tiles from which an image has the "large flat regions" trait. UI captures are
   * mostly flat panels; camera photos and scans have noise. Fixtures: screen capture 47.6%;
   * glare 3.6% (its clipped core), card photo, card PNG, greyscale, blurred 0%.
   */
  minFlatTileShare: 0.25,
  /**
   * The screenshot rule: of the three traits — (1) flat regions as above, (2) screen-sized
   * dimensions (`screenSizes`) without camera EXIF Make/Model, (3) an alpha channel — at least
   * two, and the flat regions must be one of them. Each trait alone has innocent causes (a scan's
   * clipped white margins; an app that strips EXIF and resizes to 1600×900; a PNG exported with
   * alpha), and the last two are only container properties, so they can confirm flat pixels but
   * never convict a photo without them. Fixtures: screen capture 3 traits (47.6% flat, 1920×1080
   * without EXIF, RGBA); every photo fixture 0.
   */
  screenshotMinTraits: 2,
  /** See SCREEN_SIZES; matched exactly, in either orientation. */
  screenSizes: Object.freeze(SCREEN_SIZES),

  // ---- Resources (not a judgement, but tunable, so kept with the rest) ----

  /**
   * Screenings run at once per screener; the rest wait holding only their subject. Two: the
   * production machine has 2 cores, and each running image screening holds ≤ ~5 MB of pixels in
   * JS plus libvips' working set.
   */
  concurrency: 2,
  /**
   * Uploads that may wait for a screening slot at once, per screener (one per process); a
   * platform may hold half of them, so another platform always finds room. Each holds an open
   * request and up to 10 MiB of spooled file on disk (64: at most 640 MiB of spool); a burst of
   * a few dozen ordinary uploads (about a second each) still fits, and `maxWaitMs` refuses the
   * rest when hostile PDFs hold the slots (up to `parseTimeoutMs` each). More → 503
   * SERVICE_UNAVAILABLE with Retry-After, nothing stored.
   */
  maxWaiting: 64,
  /**
   * Longest an upload waits for a screening slot: well under the minute a proxy or client
   * commonly gives a request, so the refusal reaches the caller. Longer → 503, as above.
   */
  maxWaitMs: 30_000,
  /**
   * Decompression-bomb guard for PDFs: most bytes a PDF's structure streams (object and xref
   * streams, which loading decodes) may decode to, in all: 4 MiB. They hold only the document's
   * small objects (dictionaries, the xref; never page content or images), about 200 bytes per
   * object, so 4 MiB is some 20,000 objects — far beyond an identity document or a statement.
   * pdf-lib decodes in JavaScript at roughly 30–80 MB/s, so the cap is reached in well under a
   * second even on a busy machine. More → dataNotReadable, refused with the reason.
   */
  maxDecodedBytes: 4 * 1024 * 1024,
  /**
   * Decompression-bomb guard for PDFs, per stream: once a stream has decoded past
   * `inflationGraceBytes` (1 MiB), its decoded size may be at most 100 × its encoded size —
   * Apache POI's zip-bomb rule (minimum inflate ratio 0.01). Structure streams compress 3–10×;
   * a bomb's 1000× is caught after about a megabyte, long before any total cap. More →
   * dataNotReadable, refused with the reason.
   */
  maxInflationRatio: 100,
  inflationGraceBytes: 1024 * 1024,
  /**
   * Longest a decode may run (a PDF parse or an image's pixel statistics in the screening
   * worker, from when the worker takes it; an image's libvips pipeline, rounded up to whole
   * seconds). A 10 MB document decodes in about a second; the margin is for a busy machine (the
   * pixel and decoded-byte caps stop bombs long before). Longer → refused.
   */
  parseTimeoutMs: 15_000,
  /**
   * V8 heap (old generation, MB) of a screening worker (PDF parses, pixel statistics: their
   * pixel buffers are outside the heap, bounded by `analysisMaxSide`). pdf-lib's object graph
   * of a 10 MB document needs a few tens of MB. More → the worker dies and the file is refused.
   */
  parseHeapMb: 96,
});
