/** CSV for items' bulk import and export: parsing lines as they stream in, and quoting cells. */
import { InvalidParameters } from '../errors';

export const EXPORT_COLUMNS = [
  'id',
  'value',
  'secondary_value',
  'comment',
  'expires_at',
  'archived',
  'archived_at',
  'author_type',
  'author_identifier',
  'created_at',
] as const;

/** One line of CSV (RFC 4180 quoting; a quoted field cannot hold a line break): its cells, or null. */
export function parseCsvLine(line: string): string[] | null {
  const cells: string[] = [];
  let i = 0;
  const s = line.endsWith('\r') ? line.slice(0, -1) : line;
  for (;;) {
    if (s[i] === '"') {
      let cell = '';
      i++;
      for (;;) {
        const q = s.indexOf('"', i);
        if (q < 0) return null;
        cell += s.slice(i, q);
        if (s[q + 1] === '"') {
          cell += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      cells.push(cell);
      if (i === s.length) return cells;
      if (s[i] !== ',') return null;
      i++;
    } else {
      const c = s.indexOf(',', i);
      const cell = c < 0 ? s.slice(i) : s.slice(i, c);
      if (cell.includes('"')) return null;
      cells.push(cell);
      if (c < 0) return cells;
      i = c + 1;
    }
  }
}

/**
 * Whether a spreadsheet could take the text for a formula (OWASP's CSV injection rule): it begins
 * with `=`, `+`, `-` or `@` (after any spaces and quotes), or with a tab or a carriage return
 * (after any quotes). Numbers are no exception: `-2+3+cmd|' /C calc'!A0` is a formula. The rule
 * holds for `'` + any text it holds for, which is what lets `exportedCell` be undone exactly.
 */
export function isFormulaLike(v: string): boolean {
  return /^[\s']*[=+\-@]/.test(v) || /^'*[\t\r]/.test(v);
}

/** A cell's text as exported: formula-like text is prefixed with `'`, which a spreadsheet shows as text. */
export function exportedCell(v: string): string {
  return isFormulaLike(v) ? `'${v}` : v;
}

/**
 * An imported cell's text: the `'` that `exportedCell` put before formula-like text is removed (a
 * cell is its own text otherwise), so that what was exported imports back as it was stored.
 */
export function importedCell(v: string): string {
  return v.startsWith("'") && isFormulaLike(v.slice(1)) ? v.slice(1) : v;
}

/** A CSV cell: neutralised for spreadsheets (exportedCell), quoted when it must be. */
export function csvCell(v: string): string {
  const safe = exportedCell(v);
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** Text arriving in chunks, as lines (without their line breaks); a line longer than `maxLine` fails. */
export async function* linesOf(
  chunks: AsyncIterable<Uint8Array | string>,
  maxLine = 8192,
): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let rest = '';
  for await (const chunk of chunks) {
    let text: string;
    try {
      text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    } catch {
      throw new InvalidParameters([{ field: 'body', message: 'is not UTF-8 text' }]);
    }
    rest += text;
    let nl: number;
    while ((nl = rest.indexOf('\n')) >= 0) {
      if (nl > maxLine) throw tooLong(maxLine);
      yield rest.slice(0, nl);
      rest = rest.slice(nl + 1);
    }
    if (rest.length > maxLine) throw tooLong(maxLine);
  }
  if (rest) yield rest;
}

const tooLong = (maxLine: number) =>
  new InvalidParameters([{ field: 'body', message: `a line is longer than ${maxLine} characters` }]);
