#!/usr/bin/env node
/**
 * The history of recorded runs, from their machine-readable results (`bench/results/*.json`,
 * written with `--json FILE` by `npm run eval` (kind `eval`) and `npm run bench` (kind `bench`)):
 * one table per kind, one row per run, oldest first, with the headline figures. Runs recorded
 * before results carried their commit and machine (`run`) take their date from the file's name.
 *
 *   node scripts/results-history.js            Markdown tables on stdout
 *   node scripts/results-history.js DIR        the results in DIR instead
 *   node scripts/results-history.js --write    rewrite the tables in the docs (below)
 *   node scripts/results-history.js --check    exit 1 when a doc's table is not what --write writes
 *
 * The docs hold the tables between `<!-- results-history: KIND -->` and `<!-- /results-history -->`
 * (KIND `eval` or `bench`): docs/detection.md the evaluation's, docs/performance.md the bench's.
 * A unit test runs the check (test/unit/app/docs-generated.spec.ts), so a run recorded in bench/results
 * without the table regenerated fails `npm run test:unit`.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
/** The docs that hold a generated table. */
const DOCS = ['docs/detection.md', 'docs/performance.md'];
const STUFFING = [
  'stuffing_hosting',
  'stuffing_residential',
  'stuffing_vpn',
  'library_bots',
  'stealth_bots',
  'scripted_tokens',
];
const pct = (n, d) => (d > 0 ? `${((100 * n) / d).toFixed(2)}%` : '—');

/** A table row: sorted by when the run was, its first cells the date, the commit and the run's name. */
function rowOf(file, doc, cells) {
  const date = doc.run?.at?.slice(0, 10) ?? path.basename(file).slice(0, 10);
  const commit = doc.run?.commit ? `${doc.run.commit.slice(0, 7)}${doc.run.dirty ? '+' : ''}` : '—';
  return {
    sort: `${date} ${doc.run?.at ?? ''} ${file}`,
    cells: [date, commit, path.basename(file, '.json'), ...cells],
  };
}
const n0 = (v) => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v).toLocaleString('en-GB') : '—');
const n2 = (v) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(2) : '—');
const n1 = (v) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(1) : '—');

/** A bench run: REST /v1/risk against the ceiling, per CPU, documents written, and p99 at 500/s offered. */
function benchRow(file, doc) {
  const f = doc.figures ?? {};
  const closed = f.closed?.doors ?? {};
  const rest = closed.rest;
  const ceiling = closed.ceiling;
  const at500 = (f.open ?? []).find((o) => o.rate === 500)?.doors?.rest;
  return rowOf(file, doc, [
    rest ? `${n0(rest.throughput)}/s` : '—',
    rest && ceiling ? `×${(rest.throughput / ceiling.throughput).toFixed(4)}` : '—',
    rest ? `${n0(rest.serverCpu + rest.dbCpu)} (${n0(rest.serverCpu)} + ${n0(rest.dbCpu)})` : '—',
    rest ? n1(rest.writes) : '—',
    rest ? `${n2(rest.p50)} / ${n2(rest.p99)}` : '—',
    at500 ? n2(at500.p99) : '—',
    rest ? String(rest.errors) : '—',
  ]);
}

function row(file, doc) {
  if (doc.kind === 'bench') return null;
  const f = doc.figures;
  if (!f || !Array.isArray(f.scenarios) || !f.legit) return null;
  const bucket = (name) => f.legit.byHistory.find((b) => b.bucket === name);
  const scenario = (name) => f.scenarios.find((s) => s.scenario === name && !s.part);
  const stopped = (name) => {
    const s = scenario(name);
    return s ? pct(s.stopped, s.attempts) : '—';
  };
  const stuffing = STUFFING.map(scenario).filter(Boolean);
  const worst = stuffing.length
    ? stuffing.reduce((a, s) => (s.stopped / s.attempts < a.stopped / a.attempts ? s : a))
    : null;
  const b10 = bucket('10-29');
  const b30 = bucket('30+');
  const integration =
    { client: 'client', opaque: 'opaque tokens', none: 'headers only' }[doc.options?.tokens] ?? '?';
  return rowOf(file, doc, [
    integration,
    `${b10 ? pct(b10.friction, b10.logins) : '—'} / ${b30 ? pct(b30.friction, b30.logins) : '—'}`,
    pct(f.legit.denied, f.legit.logins),
    f.legit.waveSignups ? pct(f.legit.waveSignupFriction, f.legit.waveSignups) : '—',
    `${stopped('targeted')} / ${stopped('very_targeted')}`,
    worst ? `${pct(worst.stopped, worst.attempts)} (${worst.scenario})` : '—',
    typeof f.auc === 'number' ? f.auc.toFixed(4) : '—',
  ]);
}

/** The tables of every kind, from the results in `dir`. */
function tablesOf(dir) {
  const rows = [];
  const benchRows = [];
  for (const name of fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    let doc;
    try {
      doc = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
    } catch {
      continue;
    }
    // A bench run without the closed loop (imports, webhooks, overload alone) has no row.
    if (doc.kind === 'bench') {
      if (doc.figures?.closed?.doors?.rest) benchRows.push(benchRow(name, doc));
    } else {
      const r = row(name, doc);
      if (r) rows.push(r);
    }
  }
  const table = (head, list) => {
    list.sort((a, b) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0));
    return `| ${head.join(' | ')} |\n|${head.map(() => '---').join('|')}|\n${list.map((r) => `| ${r.cells.join(' | ')} |\n`).join('')}`;
  };
  return {
    eval: {
      title: 'Evaluation (`npm run eval`)',
      text: table(
        [
          'date',
          'commit',
          'run',
          'integration',
          'friction, 10–29 / 30+ logins',
          'denied',
          'real sign-ups in a wave stopped',
          'targeted / very targeted stopped',
          'least-stopped stuffing or bots',
          'AUC',
        ],
        rows,
      ),
    },
    bench: {
      title: 'Hot path (`npm run bench`), REST `/v1/risk` closed loop',
      text: table(
        [
          'date',
          'commit',
          'run',
          'verdicts/s',
          'of the ceiling',
          'CPU µs/verdict (Rampart + database)',
          'documents written/verdict',
          'p50 / p99 ms',
          'p99 ms at 500/s offered',
          'errors',
        ],
        benchRows,
      ),
    },
  };
}

/** A doc with each of its generated tables as --write makes it. */
function regenerate(text, file, tables) {
  return text.replace(
    /(<!-- results-history: (\w+) -->\n)[\s\S]*?(<!-- \/results-history -->)/g,
    (_, open, kind, close) => {
      const t = tables[kind];
      if (!t) throw new Error(`${file}: no table of kind ${kind}`);
      return `${open}\n${t.text}\n${close}`;
    },
  );
}

/**
 * The docs whose tables are not those the results in `dir` make (`--check`); with `write`, those
 * docs are rewritten (`--write`).
 */
function staleDocs({ dir = path.join(root, 'bench', 'results'), write = false } = {}) {
  const tables = tablesOf(dir);
  const stale = [];
  for (const doc of DOCS) {
    const file = path.join(root, doc);
    const text = fs.readFileSync(file, 'utf8');
    const next = regenerate(text, doc, tables);
    if (next === text) continue;
    if (write) fs.writeFileSync(file, next);
    stale.push(doc);
  }
  return stale;
}

module.exports = { staleDocs };

if (require.main === module) {
  const args = process.argv.slice(2);
  const mode = args.includes('--write') ? 'write' : args.includes('--check') ? 'check' : 'print';
  const dir = args.find((a) => !a.startsWith('--')) ?? path.join(root, 'bench', 'results');
  if (mode === 'print') {
    for (const t of Object.values(tablesOf(dir))) process.stdout.write(`### ${t.title}\n\n${t.text}\n`);
  } else {
    const stale = staleDocs({ dir, write: mode === 'write' });
    if (stale.length && mode === 'check') {
      process.stderr.write(
        `results-history: the tables of ${stale.join(', ')} are not those of bench/results: run node scripts/results-history.js --write\n`,
      );
      process.exit(1);
    }
  }
}
