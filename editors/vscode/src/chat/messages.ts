// Messages between the extension host and the chat webview (media/chat.js).
import type { CommandInfo } from '../protocol';
import type { Block, BlockChange } from '../transcript';

export type ToWebview =
  | { type: 'reset'; blocks: Block[]; running: boolean }
  | { type: 'blocks'; changes: BlockChange[]; running: boolean }
  | { type: 'prefill'; text: string; context: string | undefined }
  | { type: 'running'; running: boolean }
  | { type: 'commands'; commands: CommandInfo[] };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'sessions' }
  | { type: 'clearContext' }
  | { type: 'commands' }
  | { type: 'copy'; text: string }
  | { type: 'rewind'; index: number }
  | { type: 'fork'; index: number };

export function isFromWebview(value: unknown): value is FromWebview {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const type = (value as { type?: unknown }).type;
  switch (type) {
    case 'send':
    case 'copy':
      return typeof (value as { text?: unknown }).text === 'string';
    case 'rewind':
    case 'fork':
      return Number.isInteger((value as { index?: unknown }).index);
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
