/**
 * A code frame, as Vite's overlay and Babel print them: the lines around a location, numbered, with
 * a caret under the column.
 *
 * @example
 *   1 | import { defineAgent } from 'hangar';
 * > 2 | export default defineAgent({ run: async () => 'x' )};
 *     |                                                   ^
 *   3 |
 */
export function codeFrame(source: string, line: number, column?: number | null, context = 2): string {
  const lines = source.split(/\r?\n/);
  if (line < 1 || line > lines.length) return '';
  const first = Math.max(1, line - context);
  const last = Math.min(lines.length, line + context);
  const width = String(last).length;
  const out: string[] = [];
  for (let n = first; n <= last; n++) {
    const text = lines[n - 1]!.replace(/\t/g, '  ');
    out.push(`${n === line ? '>' : ' '} ${String(n).padStart(width)} | ${text}`.trimEnd());
    if (n === line && column && column >= 1) {
      // Tabs were widened to two spaces above; the caret follows them.
      const before = lines[n - 1]!.slice(0, column - 1).replace(/\t/g, '  ');
      out.push(`  ${' '.repeat(width)} | ${' '.repeat(before.length)}^`);
    }
  }
  return out.join('\n');
}
