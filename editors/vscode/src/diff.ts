// Applying the unified diff of a permission request to the file's current text, so that
// the approval can be shown as a real side-by-side diff. Pure; unit-tested.

interface Hunk {
  oldStart: number; // 1-based; 0 for a file that was empty
  lines: string[]; // with their ' ', '-', '+' prefix
}

function parseHunks(diff: string): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | undefined;
  for (const line of diff.split('\n')) {
    const header = /^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@/.exec(line);
    if (header) {
      current = { oldStart: Number(header[1]), lines: [] };
      hunks.push(current);
    } else if (current && (line.startsWith(' ') || line.startsWith('-') || line.startsWith('+'))) {
      // File headers (`---`/`+++`) come before the first hunk, so inside one these
      // prefixes are always hunk lines.
      current.lines.push(line);
    } else if (current && line === '') {
      // Some generators drop the space of an empty context line.
      current.lines.push(' ');
    }
  }
  // A trailing newline of the diff yields one spurious empty context line per hunk end.
  for (const h of hunks) {
    while (h.lines.length > 0 && h.lines[h.lines.length - 1] === ' ') {
      h.lines.pop();
    }
  }
  return hunks;
}

/**
 * The text after the diff, or undefined when the diff does not apply (the context lines
 * differ from `text`); then the caller shows the diff itself.
 */
export function applyUnifiedDiff(text: string, diff: string): string | undefined {
  const hunks = parseHunks(diff);
  if (hunks.length === 0) {
    return undefined;
  }
  const endsWithNewline = text.endsWith('\n');
  const lines = text === '' ? [] : (endsWithNewline ? text.slice(0, -1) : text).split('\n');
  const out: string[] = [];
  let cursor = 0; // next line of `lines` to copy
  for (const hunk of hunks) {
    const start = Math.max(hunk.oldStart - 1, 0);
    if (start < cursor || start > lines.length) {
      return undefined;
    }
    out.push(...lines.slice(cursor, start));
    cursor = start;
    for (const line of hunk.lines) {
      const body = line.slice(1);
      if (line[0] === '+') {
        out.push(body);
      } else {
        if (lines[cursor] !== body) {
          return undefined;
        }
        if (line[0] === ' ') {
          out.push(body);
        }
        cursor++;
      }
    }
  }
  out.push(...lines.slice(cursor));
  const noNewlineAtEnd = diff.includes('\\ No newline at end of file');
  return out.join('\n') + ((endsWithNewline || text === '') && !noNewlineAtEnd && out.length > 0 ? '\n' : '');
}
