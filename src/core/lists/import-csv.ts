/**
 * Reading a CSV import into items, before anything is written: the header, then every row
 * checked as the list's type requires. One bad line fails the whole import (422) naming each bad
 * line (the first MAX_REPORTED_LINES, then a count); a good file gives its items, rows repeating a
 * value merged into one item (the last row wins).
 */
import type { Actor } from '../audit/model';
import { InvalidParameters, type FieldProblem } from '../errors';
import { importedCell, parseCsvLine } from './csv';
import type { ItemDraft, List, ListItem } from './model';
import { buildItem, report } from './validation';

export interface ReadCsv {
  /** Data rows (the header and blank lines not counted). */
  rows: number;
  /** The distinct items, in the order their value first appeared. */
  items: ListItem[];
}

/**
 * The items of a CSV (`lines`: the text line by line, header first: `value` or `primary_value`,
 * optionally `secondary_value`, `comment`, `expires_at` or `auto_archives_at`; other columns are
 * ignored, so an export imports back). At most `maxRows` data rows.
 */
export async function readCsv(
  list: List,
  actor: Actor,
  now: Date,
  lines: AsyncIterable<string>,
  maxRows: number,
): Promise<ReadCsv> {
  const problems: FieldProblem[] = [];
  const items = new Map<string, ListItem>();
  let header: string[] | null = null;
  let lineNo = 0;
  let rows = 0;
  let more = 0;
  for await (const raw of lines) {
    lineNo++;
    const line = lineNo === 1 ? raw.replace(/^\ufeff/, '') : raw;
    if (line.trim() === '') continue;
    const cells = parseCsvLine(line);
    if (!cells) {
      report(problems, lineNo, 'is not valid CSV (a quoted field must end on its line)', () => more++);
      continue;
    }
    if (!header) {
      header = cells.map((c) => c.trim().toLowerCase());
      if (!header.includes('value') && !header.includes('primary_value')) {
        throw new InvalidParameters([
          { field: 'line 1', message: 'the header must name a `value` (or `primary_value`) column' },
        ]);
      }
      continue;
    }
    rows++;
    if (rows > maxRows)
      throw new InvalidParameters([
        { field: `line ${lineNo}`, message: `an import has at most ${maxRows} rows; nothing was imported` },
      ]);
    const named = header;
    const cell = (name: string): string | undefined => {
      const at = named.indexOf(name);
      const text = at < 0 ? undefined : cells[at];
      return text === undefined ? undefined : importedCell(text);
    };
    const expires = cell('expires_at') || cell('auto_archives_at');
    const draft: ItemDraft = {
      primaryValue: cell('value') ?? cell('primary_value') ?? '',
      secondaryValue: cell('secondary_value') || undefined,
      comment: cell('comment') || undefined,
      expiresAt: expires || undefined,
    };
    const lineProblems: FieldProblem[] = [];
    const item = buildItem(list, draft, actor, now, lineProblems, '');
    // A value repeated: the last row wins, at the place the value first appeared.
    if (item) items.set(item.id, item);
    for (const p of lineProblems) report(problems, lineNo, `${p.field}: ${p.message}`, () => more++);
  }
  if (!header)
    throw new InvalidParameters([{ field: 'line 1', message: 'the CSV is empty: give a header and rows' }]);
  if (problems.length) {
    if (more) problems.push({ field: 'lines', message: `and ${more} more bad lines; nothing was imported` });
    throw new InvalidParameters(problems);
  }
  return { rows, items: [...items.values()] };
}
