// Messages between the extension host and the chat webview (media/chat.js).
import type { BackgroundCommand, CommandInfo, QueueItem } from '../protocol';
import { isPromptImages, type PromptImage } from './images';
import type { Block, BlockChange } from '../transcript';

export type ToWebview =
  | { type: 'reset'; blocks: Block[]; running: boolean }
  | { type: 'blocks'; changes: BlockChange[]; running: boolean }
  /** Text for the input box (and the label of the attached context; images to attach
   *  again, after a refused prompt). */
  | { type: 'prefill'; text: string; context: string | undefined; images?: PromptImage[] }
  | { type: 'running'; running: boolean }
  | { type: 'commands'; commands: CommandInfo[] }
  /** What waits (steering, queued) and the background commands, whole, after a change. */
  | { type: 'live'; queue: QueueItem[]; background: BackgroundCommand[] }
  /** The session works apart: its branch in the toolbar, with an Apply button (none: it
   *  works in the workspace). */
  | { type: 'worktree'; label?: { text: string; title: string } };

/** How a message sent while a turn runs goes: into that turn, or into the queue. */
export type SendHow = 'steer' | 'queue';

export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string; how?: SendHow; images?: PromptImage[] }
  | { type: 'unqueue'; id: string }
  | { type: 'killBackground'; id: string }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'sessions' }
  | { type: 'clearContext' }
  | { type: 'commands' }
  | { type: 'copy'; text: string }
  | { type: 'rewind'; index: number }
  | { type: 'fork'; index: number }
  | { type: 'review'; index: number }
  | { type: 'applyWorktree' };

export function isFromWebview(value: unknown): value is FromWebview {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const type = (value as { type?: unknown }).type;
  switch (type) {
    case 'send': {
      const { text, how, images } = value as { text?: unknown; how?: unknown; images?: unknown };
      return (
        typeof text === 'string' &&
        (how === undefined || how === 'steer' || how === 'queue') &&
        (images === undefined || isPromptImages(images))
      );
    }
    case 'copy':
      return typeof (value as { text?: unknown }).text === 'string';
    case 'rewind':
    case 'fork':
    case 'review':
      return Number.isInteger((value as { index?: unknown }).index);
    case 'unqueue':
    case 'killBackground':
      return typeof (value as { id?: unknown }).id === 'string';
    case 'ready':
    case 'cancel':
    case 'newSession':
    case 'sessions':
    case 'clearContext':
    case 'commands':
    case 'applyWorktree':
      return true;
    default:
      return false;
  }
}
