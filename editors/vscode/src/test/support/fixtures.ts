// A workspace on disk, the fake provider as a process, and waiting.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const BIN = path.resolve(process.env.AGENTLS_BIN ?? path.join(__dirname, '../../../../../target/debug/agentls'));
/** The dev kit's binary (the fake provider): $AGENTLS_DEV_BIN, else the one beside agentls. */
export const DEV_BIN = path.resolve(process.env.AGENTLS_DEV_BIN ?? path.join(path.dirname(BIN), 'agentls-dev'));

export function workspace(files: Record<string, string>): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentls-vscode-')));
  fs.mkdirSync(path.join(dir, '.git'));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

export interface Fake {
  url: string;
  stop(): void;
}

/** `agentls-dev fake-provider --script`: its base URL; it exits when its stdin closes. */
export async function fakeProvider(script: object): Promise<Fake> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agentls-fake-')), 'script.json');
  fs.writeFileSync(file, JSON.stringify(script));
  const child: ChildProcess = spawn(DEV_BIN, ['fake-provider', '--script', file], { stdio: ['pipe', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n')) {
        resolve(line.trim());
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`fake provider exited (${code})`)));
  });
  return {
    url,
    stop: () => {
      child.stdin?.end();
      child.kill();
    },
  };
}

/** Waits for `check` to give a value, without a time limit (no test is bound by the clock):
 * a stuck wait says what it waits for every 30 s, and the run's own limit ends it. */
export async function waitFor<T>(what: string, check: () => T | undefined | false): Promise<T> {
  let said = Date.now();
  for (;;) {
    const value = check();
    if (value) {
      return value;
    }
    if (Date.now() - said > 30000) {
      console.error(`still waiting for ${what}`);
      said = Date.now();
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
