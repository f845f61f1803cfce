// Real images for emoji tests, made with sharp.
import sharp from 'sharp';

const solid = (width: number, height: number, r: number) =>
  sharp({ create: { width, height, channels: 4, background: { r, g: 80, b: 160, alpha: 1 } } });

export const pngImage = (width = 100, height = 80) => solid(width, height, 200).png().toBuffer();
export const jpegImage = () => solid(90, 90, 10).jpeg().toBuffer();
export const tiffImage = () => solid(40, 40, 10).tiff().toBuffer();

/** A three-frame animated GIF, wider than high. */
export async function animatedGif(): Promise<Buffer> {
  const frames = await Promise.all([255, 0, 128].map((r) => solid(120, 80, r).png().toBuffer()));
  return sharp(frames, { join: { animated: true } })
    .gif()
    .toBuffer();
}

export async function imageInfo(data: Uint8Array) {
  const m = await sharp(data, { animated: true }).metadata();
  return { format: m.format, width: m.width, height: m.pageHeight ?? m.height, pages: m.pages ?? 1 };
}
