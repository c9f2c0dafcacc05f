/**
 * CSV of list items: OWASP's CSV-injection rule on export (a cell a spreadsheet could take for a
 * formula is prefixed with `'`), undone exactly on import, and the cell quoting.
 */
import {
  csvCell,
  exportedCell,
  importedCell,
  isFormulaLike,
  linesOf,
  parseCsvLine,
} from '../../../src/core/lists/csv';

describe('CSV injection (OWASP): cells a spreadsheet could run are neutralised', () => {
  // [stored text, formula-like, exported text]
  const cases: [string, boolean, string][] = [
    ['=1+1', true, "'=1+1"],
    ['+1+1', true, "'+1+1"],
    ['-1+1', true, "'-1+1"],
    ["-2+3+cmd|'/C calc'!A0", true, "'-2+3+cmd|'/C calc'!A0"],
    ['-5', true, "'-5"],
    ['@SUM(A1:A2)', true, "'@SUM(A1:A2)"],
    ['\t=1+1', true, "'\t=1+1"],
    ['\tabc', true, "'\tabc"],
    ['\rabc', true, "'\rabc"],
    ['  =1+1', true, "'  =1+1"],
    [' -1', true, "' -1"],
    ["'=1+1", true, "''=1+1"],
    ["''@x", true, "'''@x"],
    ["'\tabc", true, "''\tabc"],
    ['203.0.113.0/24', false, '203.0.113.0/24'],
    ['2001:db8::/32', false, '2001:db8::/32'],
    ['ana@example.com', false, 'ana@example.com'],
    ['13335', false, '13335'],
    ["'quoted", false, "'quoted"],
    ['a=b', false, 'a=b'],
    ['', false, ''],
    [' ', false, ' '],
  ];
  it.each(cases)(
    '%j: formula-like %s, exported as %j, imported back as stored',
    (stored, formula, exported) => {
      expect(isFormulaLike(stored)).toBe(formula);
      expect(exportedCell(stored)).toBe(exported);
      expect(isFormulaLike(exportedCell(stored))).toBe(formula);
      expect(importedCell(exportedCell(stored))).toBe(stored);
    },
  );

  it('a cell of the import is its own text unless it is a neutralised one', () => {
    expect(importedCell("'abc")).toBe("'abc");
    expect(importedCell("'")).toBe("'");
    expect(importedCell("'=x")).toBe('=x');
    expect(importedCell('=x')).toBe('=x');
  });

  it('quotes a cell holding a comma, a quote or a line break, after neutralising it', () => {
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe(`"'=HYPERLINK(""http://x"",""y"")"`);
    expect(csvCell('\rx')).toBe(`"'\rx"`);
    expect(parseCsvLine(csvCell("-2+3+cmd|'/C calc'!A0"))).toEqual(["'-2+3+cmd|'/C calc'!A0"]);
    expect(parseCsvLine(`${csvCell('a,b')},${csvCell('=1')}`)).toEqual(['a,b', "'=1"]);
  });
});

describe('lines of an import', () => {
  const read = async (chunks: string[], maxLine?: number) => {
    const out: string[] = [];
    const source = (async function* () {
      yield* chunks;
    })();
    for await (const l of linesOf(source, maxLine)) out.push(l);
    return out;
  };
  it('splits chunks into lines, wherever the chunks end', async () => {
    expect(await read(['val', 'ue\n1.2', '.3.4\r\n5.6.7.8'])).toEqual(['value', '1.2.3.4\r', '5.6.7.8']);
  });
  it('refuses a line longer than the bound, ended or not, in one chunk or across several', async () => {
    await expect(read([`value\n${'x'.repeat(11)}\nok\n`], 10)).rejects.toMatchObject({
      fields: [{ field: 'body', message: 'a line is longer than 10 characters' }],
    });
    await expect(read(['value\n', 'x'.repeat(6), 'x'.repeat(6)], 10)).rejects.toMatchObject({
      fields: [{ field: 'body' }],
    });
    expect(await read([`${'x'.repeat(10)}\n`], 10)).toEqual(['x'.repeat(10)]);
  });
});
