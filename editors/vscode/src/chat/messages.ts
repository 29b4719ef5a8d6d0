// Messages between the extension host and the chat webview (media/chat.js).
import type { CommandInfo } from '../protocol';
import { isPromptImages, type PromptImage } from './images';
import type { Block, BlockChange } from '../transcript';

export type ToWebview =
  | { type: 'reset'; blocks: Block[]; running: boolean }
  | { type: 'blocks'; changes: BlockChange[]; running: boolean }
  | { type: 'prefill'; text: string; context: string | undefined }
  | { type: 'running'; running: boolean }
  | { type: 'commands'; commands: CommandInfo[] };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string; images?: PromptImage[] }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'sessions' }
  | { type: 'clearContext' }
  | { type: 'commands' }
  | { type: 'copy'; text: string };

export function isFromWebview(value: unknown): value is FromWebview {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const type = (value as { type?: unknown }).type;
  switch (type) {
    case 'send': {
      const { text, images } = value as { text?: unknown; images?: unknown };
      return typeof text === 'string' && (images === undefined || isPromptImages(images));
    }
    case 'copy':
      return typeof (value as { text?: unknown }).text === 'string';
    case 'ready':
    case 'cancel':
    case 'newSession':
    case 'sessions':
    case 'clearContext':
    case 'commands':
      return true;
    default:
      return false;
  }
}
