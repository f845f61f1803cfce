// Custom emoji images (uploads.md 3.4): decoded, checked against the pixel limit, resized to 64x64
// in the format the content type names; animated images keep their frames and get a still PNG.
import type { Metadata } from 'sharp';
import { DomainError } from '../errors.js';

const SIZE = 64;
const MAX_TOTAL_PIXELS = 90_000_000;
const MAX_RESIZED_BYTES = 128 * 1024;

/** The accepted types (thumbnailable and inline) and the extension each is stored with. */
export const EMOJI_FORMATS = {
  'image/avif': { format: 'avif', extension: '.avif' },
  'image/gif': { format: 'gif', extension: '.gif' },
  'image/jpeg': { format: 'jpeg', extension: '.jpg' },
  'image/png': { format: 'png', extension: '.png' },
  'image/webp': { format: 'webp', extension: '.webp' },
} as const;

export type EmojiContentType = keyof typeof EMOJI_FORMATS;

export const badImage = (message: string) => new DomainError(message, { code: 'BAD_IMAGE' });

export function assertEmojiContentType(contentType: string): asserts contentType is EmojiContentType {
  if (!(contentType in EMOJI_FORMATS)) throw badImage('Invalid image format');
}

// libvips costs about 28 MiB of memory once loaded: only a process that resizes an emoji pays for it.
let sharpModule: Promise<typeof import('sharp')> | undefined;
const loadSharp = async () => (await (sharpModule ??= import('sharp'))).default;

export interface ResizedEmoji {
  image: Buffer;
  /** A still PNG of the first frame, for animated images only. */
  still: Buffer | null;
}

export async function resizeEmoji(data: Buffer, contentType: EmojiContentType): Promise<ResizedEmoji> {
  const { format } = EMOJI_FORMATS[contentType];
  const sharp = await loadSharp();
  let metadata: Metadata;
  try {
    metadata = await sharp(data, { animated: true }).metadata();
  } catch {
    throw badImage('Could not decode image; did you upload an image file?');
  }
  const pages = metadata.pages ?? 1;
  const frameHeight = metadata.pageHeight ?? metadata.height ?? 0;
  if ((metadata.width ?? 0) * frameHeight * pages > MAX_TOTAL_PIXELS) throw badImage('Image size exceeds limit.');
  try {
    if (pages === 1) {
      const image = await sharp(data).resize(SIZE, SIZE, { fit: 'cover', position: 'centre' }).toFormat(format).toBuffer();
      return { image: withinLimit(image), still: null };
    }
    const still = await sharp(data, { pages: 1 }).resize(SIZE, SIZE, { fit: 'cover', position: 'centre' }).png().toBuffer();
    const image = await sharp(data, { animated: true })
      .resize(SIZE, SIZE, { fit: 'contain', background: { r: 0, g: 0, b: 0, alpha: 0 } })
      .toFormat(format)
      .toBuffer();
    return { image: withinLimit(image), still: withinLimit(still) };
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw badImage('Image is corrupted or truncated');
  }
}

function withinLimit(resized: Buffer): Buffer {
  if (resized.length > MAX_RESIZED_BYTES) throw badImage('Image size exceeds limit');
  return resized;
}
