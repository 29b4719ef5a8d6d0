// Conversion of what VS Code knows about the active editor into the protocol's
// EditorState. Takes structural types rather than `vscode` classes so that it runs in
// plain Node tests; VS Code's Position/Range/Diagnostic objects fit these shapes.
// Positions are UTF-16 on both sides (VS Code's native unit, and what
// vscode-languageclient negotiates), so they pass through unchanged.
import type { Diagnostic, EditorState, Position, Range } from './protocol';

export interface PositionLike {
  line: number;
  character: number;
}

export interface RangeLike {
  start: PositionLike;
  end: PositionLike;
}

export interface SelectionLike extends RangeLike {
  active: PositionLike;
  isEmpty: boolean;
}

export interface DiagnosticLike {
  range: RangeLike;
  /** vscode.DiagnosticSeverity: Error 0, Warning 1, Information 2, Hint 3. */
  severity: number;
  message: string;
  source?: string;
  code?: string | number | { value: string | number };
}

export interface EditorLike {
  uri: string;
  selection: SelectionLike;
  visibleRanges?: readonly RangeLike[];
  diagnostics?: readonly DiagnosticLike[];
}

export function toPosition(p: PositionLike): Position {
  return { line: p.line, character: p.character };
}

export function toRange(r: RangeLike): Range {
  return { start: toPosition(r.start), end: toPosition(r.end) };
}

/** VS Code severities count from 0 (Error); LSP's from 1 (Error). */
export function toLspSeverity(severity: number): 1 | 2 | 3 | 4 {
  switch (severity) {
    case 0:
      return 1;
    case 1:
      return 2;
    case 2:
      return 3;
    default:
      return 4;
  }
}

export function toLspDiagnostic(d: DiagnosticLike): Diagnostic {
  const out: Diagnostic = { range: toRange(d.range), severity: toLspSeverity(d.severity), message: d.message };
  if (d.source) {
    out.source = d.source;
  }
  if (d.code !== undefined) {
    out.code = typeof d.code === 'object' ? d.code.value : d.code;
  }
  return out;
}

export function editorState(editor: EditorLike): EditorState {
  const state: EditorState = { uri: editor.uri, position: toPosition(editor.selection.active) };
  if (!editor.selection.isEmpty) {
    state.selection = toRange(editor.selection);
  }
  const visible = editor.visibleRanges?.[0];
  if (visible) {
    state.visibleRange = toRange(visible);
  }
  if (editor.diagnostics && editor.diagnostics.length > 0) {
    state.diagnostics = editor.diagnostics.map(toLspDiagnostic);
  }
  return state;
}
