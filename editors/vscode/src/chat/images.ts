// Images pasted or dropped into the chat input: what the webview may send with a prompt
// (`agent/session/prompt`'s `images`). Checked here, in the extension host, before they
// go to the server (which checks them again, with the model's capability). Pure.

export interface PromptImage {
  mimeType: string;
  /** Base64 of the file, without a `data:` prefix. */
  data: string;
}

/** The formats the server takes (PNG, JPEG, GIF, WebP). */
export const IMAGE_MIME_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
/** At most this many images in one prompt, each at most MAX_IMAGE_BYTES (the server's). */
export const MAX_IMAGES = 8;
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The decoded size of base64 `data`. */
export function decodedBytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - padding;
}

/** Why `value` is not a list of images the server would take, or undefined. */
export function imagesProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) {
    return 'images must be a list';
  }
  if (value.length > MAX_IMAGES) {
    return `${value.length} images; at most ${MAX_IMAGES} are sent with one message`;
  }
  for (const [index, image] of value.entries()) {
    const { mimeType, data } = (image ?? {}) as { mimeType?: unknown; data?: unknown };
    if (typeof mimeType !== 'string' || !IMAGE_MIME_TYPES.includes(mimeType)) {
      return `image ${index + 1} is not a PNG, JPEG, GIF or WebP image`;
    }
    if (typeof data !== 'string' || data.length === 0 || !BASE64.test(data)) {
      return `image ${index + 1} has no base64 data`;
    }
    if (decodedBytes(data) > MAX_IMAGE_BYTES) {
      return `image ${index + 1} is larger than 5 MB`;
    }
  }
  return undefined;
}

export function isPromptImages(value: unknown): value is PromptImage[] {
  return imagesProblem(value) === undefined;
}
