/**
 * Real document files for screening tests, drawn with sharp (SVG rendering, composite, blur,
 * greyscale) and pdf-lib. The images are deterministic (a seeded noise generator; pdf-lib's
 * PDFs carry random font resource names). Each is memoised per process: the first call draws,
 * later calls share the same Buffer — callers must not mutate what they get.
 *
 * The base picture is a ~1600×1000 "phone photo" of an ID-1 card lying on a desk: a gradient
 * background, a slightly rotated card with coloured bands, a guilloche pattern, a portrait, text
 * fields and a three-line MRZ, uneven lighting, then sensor noise over everything, saved with
 * EXIF Make/Model. The other fixtures are derived from it.
 */
import { constants as zlibConstants, crc32, deflateRawSync, deflateSync } from 'node:zlib';
import { PDFDocument, StandardFonts, rgb } from 'pdf-lib';
import sharp from 'sharp';

export const CARD_PHOTO_WIDTH = 1600;
export const CARD_PHOTO_HEIGHT = 1000;

function memo<T>(make: () => Promise<T>): () => Promise<T> {
  let cached: Promise<T> | undefined;
  return () => {
    cached ??= make().catch((err: unknown) => {
      cached = undefined;
      throw err;
    });
    return cached;
  };
}

/** mulberry32: a tiny seeded PRNG, so every run draws the same noise. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Adds zero-mean, roughly Gaussian noise (sum of three uniforms) of standard deviation `sd`. */
function addNoise(raw: Buffer, sd: number, seed: number): Buffer {
  const rand = prng(seed);
  const out = Buffer.allocUnsafe(raw.length);
  const scale = sd * 2; // sum of 3 U(-0.5,0.5) has sd 0.5
  for (let i = 0; i < raw.length; i++) {
    const n = (rand() + rand() + rand() - 1.5) * scale;
    const v = Math.round(raw[i]! + n);
    out[i] = v < 0 ? 0 : v > 255 ? 255 : v;
  }
  return out;
}

const CAMERA_EXIF = { IFD0: { Make: 'Corridor Test Optics', Model: 'DocCam 12' } };

const MRZ_LINES = [
  'IDCOR0012345674<<<<<<<<<<<<<<<',
  '9001019F3012315COR<<<<<<<<<<<6',
  'TESTER<<MARIA<ELENA<<<<<<<<<<<',
];

function cardSvg(): string {
  const W = CARD_PHOTO_WIDTH;
  const H = CARD_PHOTO_HEIGHT;
  // Card: ID-1 proportions (85.6 × 53.98 mm) at ~13 px/mm.
  const cw = 1120;
  const ch = 706;
  const guilloche: string[] = [];
  for (let i = 0; i < 28; i++) {
    const y = 150 + i * 19;
    guilloche.push(
      `<path d="M 0 ${y} C 180 ${y - 60} 360 ${y + 60} 560 ${y} S 940 ${y - 60} ${cw} ${y}" stroke="${
        i % 2 ? '#9fc6d8' : '#d9b3c9'
      }" stroke-width="1.6" fill="none"/>`,
    );
  }
  const field = (x: number, y: number, label: string, value: string) =>
    `<text x="${x}" y="${y}" font-family="DejaVu Sans" font-size="17" fill="#4a5566">${label}</text>` +
    `<text x="${x}" y="${y + 32}" font-family="DejaVu Sans" font-weight="bold" font-size="28" fill="#101820">${value}</text>`;
  const mrz = MRZ_LINES.map(
    (line, i) =>
      `<text x="40" y="${575 + i * 44}" font-family="DejaVu Sans Mono" font-size="38" fill="#0b0b0b" textLength="1040" lengthAdjust="spacingAndGlyphs">${line.replace(/</g, '&lt;')}</text>`,
  ).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}">
  <defs>
    <linearGradient id="desk" x1="0" y1="0" x2="1" y2="1">
      <stop offset="0" stop-color="#7a5a3c"/><stop offset="0.55" stop-color="#a07850"/><stop offset="1" stop-color="#5e4630"/>
    </linearGradient>
    <linearGradient id="cardbg" x1="0" y1="0" x2="1" y2="0.6">
      <stop offset="0" stop-color="#e6eef4"/><stop offset="0.5" stop-color="#f1e9df"/><stop offset="1" stop-color="#dde9e2"/>
    </linearGradient>
    <radialGradient id="light" cx="0.35" cy="0.3" r="0.9">
      <stop offset="0" stop-color="#ffffff" stop-opacity="0.10"/><stop offset="1" stop-color="#000000" stop-opacity="0.28"/>
    </radialGradient>
    <linearGradient id="skin" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="#e0b08c"/><stop offset="1" stop-color="#b9805c"/>
    </linearGradient>
  </defs>
  <rect width="${W}" height="${H}" fill="url(#desk)"/>
  <g stroke="#6b4e33" stroke-opacity="0.35" stroke-width="3" fill="none">
    <path d="M 0 120 Q 400 80 800 140 T ${W} 110"/><path d="M 0 860 Q 500 900 900 850 T ${W} 880"/>
    <path d="M 0 940 Q 300 920 700 960 T ${W} 930"/>
  </g>
  <g transform="translate(240 150) rotate(-2.5 ${cw / 2} ${ch / 2})">
    <rect x="6" y="10" width="${cw}" height="${ch}" rx="36" fill="#000" fill-opacity="0.35"/>
    <rect width="${cw}" height="${ch}" rx="36" fill="url(#cardbg)"/>
    ${guilloche.join('\n    ')}
    <path d="M 36 0 H ${cw - 36} A 36 36 0 0 1 ${cw} 36 V 110 H 0 V 36 A 36 36 0 0 1 36 0 Z" fill="#1f4e9c"/>
    <rect x="0" y="110" width="${cw}" height="14" fill="#d22f3c"/>
    <text x="40" y="68" font-family="DejaVu Sans" font-weight="bold" font-size="40" fill="#ffffff">REPUBLIC OF CORRIDOR</text>
    <text x="760" y="68" font-family="DejaVu Sans" font-size="30" fill="#ffd34d">IDENTITY CARD</text>
    <rect x="40" y="150" width="250" height="320" rx="8" fill="#9db7c9"/>
    <ellipse cx="165" cy="280" rx="78" ry="98" fill="url(#skin)"/>
    <path d="M 60 470 Q 165 330 270 470 Z" fill="#2d5f3a"/>
    <path d="M 92 250 Q 165 150 238 250 Q 200 190 165 195 Q 130 190 92 250 Z" fill="#3b2416"/>
    ${field(330, 170, 'Surname / Nom', 'TESTER')}
    ${field(330, 240, 'Given names / Prénoms', 'MARIA ELENA')}
    ${field(330, 310, 'Date of birth', '01 JAN 1990')}
    ${field(640, 310, 'Sex', 'F')}
    ${field(330, 380, 'Document no.', 'COR001234567')}
    ${field(640, 380, 'Date of expiry', '31 DEC 2030')}
    ${field(330, 450, 'Nationality', 'CORRIDORIAN')}
    <circle cx="980" cy="250" r="70" fill="#e8c547" fill-opacity="0.85"/>
    <circle cx="980" cy="250" r="48" fill="none" stroke="#b5832a" stroke-width="6"/>
    <rect x="20" y="520" width="${cw - 40}" height="170" fill="#f7f4ec"/>
    ${mrz}
  </g>
  <rect width="${W}" height="${H}" fill="url(#light)"/>
</svg>`;
}

/** The card photo as raw sRGB pixels (3 channels), with sensor noise. */
const cardPhotoRaw = memo(async () => {
  const { data, info } = await sharp(Buffer.from(cardSvg())).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: addNoise(data, 5, 0xc0ffee), width: info.width, height: info.height };
});

function fromRaw(raw: { data: Buffer; width: number; height: number }) {
  return sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: 3 } });
}

/** A colourful, sharp, camera-like photo of an ID card with EXIF Make/Model: passes as image/jpeg. */
export const cardPhotoJpeg = memo(async () =>
  fromRaw(await cardPhotoRaw()).jpeg({ quality: 90 }).withExif(CAMERA_EXIF).toBuffer(),
);

/** The same picture as an opaque RGB PNG (no alpha): passes as image/png. */
export const cardPhotoPng = memo(async () =>
  fromRaw(await cardPhotoRaw()).png({ compressionLevel: 6 }).withExif(CAMERA_EXIF).toBuffer(),
);

/** The same picture desaturated, still a 3-channel sRGB JPEG (so only the pixels say "grey"). */
export const grayscaleJpeg = memo(async () =>
  sharp(await cardPhotoJpeg())
    .greyscale()
    .toColourspace('srgb')
    .jpeg({ quality: 90 })
    .withExif(CAMERA_EXIF)
    .toBuffer(),
);

/** The same picture as a single-channel (b-w) JPEG. */
export const grayscaleSingleChannelJpeg = memo(async () =>
  sharp(await cardPhotoJpeg()).greyscale().toColourspace('b-w').jpeg({ quality: 90 }).withExif(CAMERA_EXIF).toBuffer(),
);

/**
 * The same scene badly out of focus: the optical blur comes before the sensor, so fresh noise
 * is added after blurring, as a camera would.
 */
export const blurredJpeg = memo(async () => {
  const base = await cardPhotoRaw();
  const { data, info } = await fromRaw(base).blur(9).raw().toBuffer({ resolveWithObject: true });
  const noisy = addNoise(data, 3, 0xb1a2);
  return sharp(noisy, { raw: { width: info.width, height: info.height, channels: 3 } })
    .jpeg({ quality: 90 })
    .withExif(CAMERA_EXIF)
    .toBuffer();
});

/** The card photo downscaled to 240×150: far too few pixels for fields or the MRZ. */
export const tinyJpeg = memo(async () =>
  sharp(await cardPhotoJpeg()).resize(240, 150).jpeg({ quality: 90 }).withExif(CAMERA_EXIF).toBuffer(),
);

/**
 * The card photo with a large specular highlight on the card: a soft white halo around a core
 * that is clipped to pure white (clipping happens in the sensor, after noise, so the core is
 * exactly 255).
 */
export const glareJpeg = memo(async () => {
  const base = await cardPhotoRaw();
  const { width: W, height: H } = base;
  const glare = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}">
    <defs><radialGradient id="g" cx="0.5" cy="0.5" r="0.5">
      <stop offset="0" stop-color="#fff" stop-opacity="1"/><stop offset="0.55" stop-color="#fff" stop-opacity="1"/>
      <stop offset="1" stop-color="#fff" stop-opacity="0"/>
    </radialGradient></defs>
    <ellipse cx="860" cy="430" rx="330" ry="230" fill="url(#g)"/>
  </svg>`;
  return fromRaw(base)
    .composite([{ input: Buffer.from(glare) }])
    .removeAlpha()
    .jpeg({ quality: 90 })
    .withExif(CAMERA_EXIF)
    .toBuffer();
});

/** The card JPEG cut in half (an interrupted upload). */
export const truncatedJpeg = memo(async () => {
  const full = await cardPhotoJpeg();
  return Buffer.from(full.subarray(0, Math.floor(full.length / 2)));
});

/**
 * A 1920×1080 screen capture of a banking web app: flat colour panels, buttons, text, an RGBA
 * PNG with no EXIF. Colourful (not grey) and sharp-edged (not blurry).
 */
export const screenCapturePng = memo(async () => {
  const W = 1920;
  const H = 1080;
  const lines: string[] = [];
  for (let i = 0; i < 14; i++) {
    lines.push(
      `<text x="360" y="${330 + i * 34}" font-family="DejaVu Sans" font-size="20" fill="#222b36">Transaction ${
        1000 + i
      } · Payment to account ending ${(4711 + i * 37) % 10000} · USD ${(12.5 * (i + 1)).toFixed(2)}</text>`,
    );
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" shape-rendering="crispEdges">
    <rect width="${W}" height="${H}" fill="#f3f5f8"/>
    <rect width="${W}" height="72" fill="#1d3b6e"/>
    <text x="32" y="48" font-family="DejaVu Sans" font-weight="bold" font-size="30" fill="#ffffff">Corridor Bank</text>
    <rect x="1560" y="16" width="320" height="40" rx="6" fill="#2f5597"/>
    <text x="1580" y="44" font-family="DejaVu Sans" font-size="20" fill="#dfe8f7">Search…</text>
    <rect x="0" y="72" width="300" height="${H - 72}" fill="#e1e6ee"/>
    ${['Dashboard', 'Accounts', 'Payments', 'Cards', 'Documents', 'Settings']
      .map(
        (item, i) =>
          `<rect x="12" y="${100 + i * 64}" width="276" height="48" rx="6" fill="${i === 4 ? '#ffb347' : '#e1e6ee'}"/>` +
          `<text x="32" y="${132 + i * 64}" font-family="DejaVu Sans" font-size="22" fill="#1d2a3a">${item}</text>`,
      )
      .join('')}
    <rect x="340" y="100" width="520" height="150" rx="10" fill="#2e9e5b"/>
    <text x="370" y="160" font-family="DejaVu Sans" font-size="26" fill="#ffffff">Available balance</text>
    <text x="370" y="215" font-family="DejaVu Sans" font-weight="bold" font-size="40" fill="#ffffff">USD 12,345.67</text>
    <rect x="890" y="100" width="520" height="150" rx="10" fill="#7b4bc4"/>
    <text x="920" y="160" font-family="DejaVu Sans" font-size="26" fill="#ffffff">Pending</text>
    <text x="920" y="215" font-family="DejaVu Sans" font-weight="bold" font-size="40" fill="#ffffff">USD 321.00</text>
    <rect x="1440" y="100" width="440" height="150" rx="10" fill="#d9453b"/>
    <text x="1470" y="185" font-family="DejaVu Sans" font-weight="bold" font-size="30" fill="#ffffff">Verify identity</text>
    <rect x="340" y="280" width="1540" height="520" rx="10" fill="#ffffff"/>
    ${lines.join('')}
    <rect x="340" y="830" width="240" height="56" rx="8" fill="#1f6fd1"/>
    <text x="372" y="866" font-family="DejaVu Sans" font-size="22" fill="#ffffff">Upload document</text>
    <rect x="600" y="830" width="160" height="56" rx="8" fill="#ffc83d"/>
    <text x="632" y="866" font-family="DejaVu Sans" font-size="22" fill="#1d2a3a">Cancel</text>
    <rect x="340" y="910" width="1540" height="140" rx="10" fill="#dff1ff"/>
    <text x="370" y="990" font-family="DejaVu Sans" font-size="22" fill="#0e4a7a">Your document must show the whole card, in colour, without glare.</text>
  </svg>`;
  return sharp(Buffer.from(svg)).ensureAlpha().png().toBuffer();
});

async function buildPdf(useObjectStreams: boolean): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  pdf.setTitle('Identity card scan');
  pdf.setCreationDate(new Date('2026-01-02T03:04:05Z'));
  pdf.setModificationDate(new Date('2026-01-02T03:04:05Z'));
  const page = pdf.addPage([595.28, 841.89]); // A4
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  page.drawText('Identity card — front', { x: 56, y: 780, size: 18, font, color: rgb(0.1, 0.15, 0.3) });
  page.drawText('Scanned for Corridor verification.', { x: 56, y: 756, size: 11, font });
  const jpg = await pdf.embedJpg(await cardPhotoJpeg());
  const w = 480;
  page.drawImage(jpg, { x: 56, y: 700 - (w * jpg.height) / jpg.width, width: w, height: (w * jpg.height) / jpg.width });
  return Buffer.from(await pdf.save({ useObjectStreams }));
}

/** A real one-page PDF (pdf-lib's default: object streams and an xref stream) with text and the card photo. */
export const validPdf = memo(() => buildPdf(true));

/** The same PDF written with a classic `xref` table and `trailer`. */
export const validPdfClassicXref = memo(() => buildPdf(false));

/** A PDF cut off two thirds of the way through: no xref, no trailer, no %%EOF. */
export const corruptPdf = memo(async () => {
  const full = await validPdf();
  return Buffer.from(full.subarray(0, Math.floor((full.length * 2) / 3)));
});

/** A complete-looking PDF whose `startxref` points into the middle of the file body. */
export const pdfWithBadStartxref = memo(async () => {
  const text = (await validPdfClassicXref()).toString('latin1');
  const at = text.lastIndexOf('startxref');
  const broken = text.slice(0, at) + text.slice(at).replace(/startxref\s+\d+/, 'startxref\n1234');
  return Buffer.from(broken, 'latin1');
});

/**
 * A PDF whose structure (header, xref, trailer, %%EOF) is intact but whose page tree is garbled:
 * `/Kids [` became `/Kids (` (same length, so every xref offset still holds).
 */
export const pdfWithGarbledBody = memo(async () => {
  const text = (await validPdfClassicXref()).toString('latin1');
  if (!text.includes('/Kids [ ')) throw new Error('unexpected pdf-lib output');
  return Buffer.from(text.replace('/Kids [ ', '/Kids ( '), 'latin1');
});

/** The valid PDF with its final `%%EOF` marker removed. */
export const pdfWithoutEof = memo(async () => {
  const text = (await validPdfClassicXref()).toString('latin1');
  const at = text.lastIndexOf('%%EOF');
  return Buffer.from(text.slice(0, at) + text.slice(at + 5), 'latin1');
});

/**
 * The valid PDF (classic xref) declaring standard-handler encryption in its trailer; offsets are
 * untouched because the trailer comes after every object.
 */
export const encryptedPdf = memo(async () => {
  const text = (await validPdfClassicXref()).toString('latin1');
  const at = text.lastIndexOf('trailer');
  const hex = '0'.repeat(64);
  const withEncrypt =
    text.slice(0, at) +
    text.slice(at).replace('<<', `<<\n/Encrypt << /Filter /Standard /V 1 /R 2 /O <${hex}> /U <${hex}> /P -44 >>`);
  return Buffer.from(withEncrypt, 'latin1');
});

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * A decompression bomb: a valid ~20 KB PNG of 12000×12000 one-bit black pixels (144 MP, 432 MB
 * as an RGB bitmap). Built by hand, as sharp would have to hold the pixels to write it.
 */
export const decompressionBombPng = memo(async () => {
  const side = 12_000;
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // greyscale
  const rows = Buffer.alloc(side * (1 + side / 8)); // each row: filter byte 0, then zero bits
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(rows, { level: 9 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
});

const MAGIC: Record<string, Buffer> = {
  'image/jpeg': Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  'image/png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  'application/pdf': Buffer.from('%PDF-1.7\n', 'latin1'),
};

/**
 * `n` bytes for size-limit tests. The content is irrelevant (and not a valid file); with a
 * content type it starts with that type's magic bytes so a sniffer would accept the start.
 */
export function bytesOfSize(n: number, contentType?: string): Buffer {
  const buf = Buffer.alloc(n, 0x41);
  const magic = contentType ? MAGIC[contentType] : undefined;
  if (magic) magic.copy(buf, 0, 0, Math.min(magic.length, n));
  return buf;
}

/**
 * A HEIF file of the card photo. This sharp build's libheif writes only AV1 (HEVC is
 * "Unsupported compression"), so this is AVIF-in-HEIF (`ftypavif`), not an HEVC-coded .heic
 * — still a real HEIF container that is neither JPEG, PNG nor PDF.
 */
export const heicImage = memo(async () =>
  sharp(await cardPhotoJpeg()).resize(800).heif({ compression: 'av1', quality: 50 }).toBuffer(),
);

/** A real WebP of the card photo. */
export const webpImage = memo(async () => sharp(await cardPhotoJpeg()).webp({ quality: 80 }).toBuffer());

/** A real TIFF of the card photo. */
export const tiffImage = memo(async () => sharp(await cardPhotoJpeg()).tiff({ compression: 'jpeg' }).toBuffer());

/**
 * zlib data that inflates to `segments` × 16 MiB of zeros, built without ever holding (or
 * deflating) the inflated bytes: one 16 MiB block of zeros is deflated once and ended with a
 * full flush (so it refers to nothing before it), repeated, closed with an empty final block and
 * the Adler-32 of the whole (for n zeros: a = 1, b = n mod 65521).
 */
function zerosBomb(segments: number): Buffer {
  const segmentBytes = 16 * 1024 * 1024;
  const segment = deflateRawSync(Buffer.alloc(segmentBytes), { level: 9, finishFlush: zlibConstants.Z_FULL_FLUSH });
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE((((segments * segmentBytes) % 65521) * 65536 + 1) >>> 0);
  return Buffer.concat([Buffer.from([0x78, 0xda]), ...Array.from({ length: segments }, () => segment), deflateRawSync(Buffer.alloc(0)), adler]);
}

/**
 * A readable one-page PDF (classic xref) that also holds `streams` object streams (/Type
 * /ObjStm, FlateDecode), each inflating to `segments` × 16 MiB of zeros. Loading a PDF decodes
 * every object stream, so a parser without a cap inflates all of it.
 */
export function pdfWithObjectStreamBombs(streams: number, segments: number): Buffer {
  const bomb = zerosBomb(segments);
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  const add = (...chunks: Buffer[]) => {
    offsets.push(length);
    for (const chunk of chunks) {
      parts.push(chunk);
      length += chunk.length;
    }
  };
  add(Buffer.from('1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n'));
  add(Buffer.from('2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n'));
  add(Buffer.from('3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\n'));
  for (let n = 4; n < 4 + streams; n++) {
    add(Buffer.from(`${n} 0 obj\n<< /Type /ObjStm /N 1 /First 8 /Filter /FlateDecode /Length ${bomb.length} >>\nstream\n`), bomb, Buffer.from('\nendstream\nendobj\n'));
  }
  const xrefAt = length;
  const xref = ['xref', `0 ${offsets.length + 1}`, '0000000000 65535 f ', ...offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n `)];
  const trailer = ['trailer', `<< /Size ${offsets.length + 1} /Root 1 0 R >>`, 'startxref', String(xrefAt), '%%EOF', ''];
  return Buffer.concat([...parts, Buffer.from([...xref, ...trailer].join('\n'), 'latin1')]);
}

/** The PDF decompression bomb: four object streams of ~260 KB, each inflating to 256 MiB — ~1 MB on disk, 1 GiB decoded. */
export const pdfDecompressionBomb = memo(async () => pdfWithObjectStreamBombs(4, 16));
