#!/usr/bin/env node
/**
 * The history of the evaluation's runs, from their machine-readable results
 * (`bench/results/*.json`, written by `node dist/bench/eval/run.js --json FILE`): one row per
 * run, oldest first, with the headline figures. Runs recorded before results carried their
 * commit and machine (`run`) take their date from the file's name.
 *
 *   node scripts/results-history.js            a Markdown table on stdout
 *   node scripts/results-history.js DIR        the results in DIR instead
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const dir = process.argv[2] ?? path.join(__dirname, '..', 'bench', 'results');
const STUFFING = ['stuffing_hosting', 'stuffing_residential', 'stuffing_vpn', 'library_bots', 'stealth_bots', 'scripted_tokens'];
const pct = (n, d) => (d > 0 ? `${((100 * n) / d).toFixed(2)}%` : '—');

function row(file, doc) {
  const f = doc.figures;
  if (!f || !Array.isArray(f.scenarios) || !f.legit) return null;
  const bucket = (name) => f.legit.byHistory.find((b) => b.bucket === name);
  const scenario = (name) => f.scenarios.find((s) => s.scenario === name);
  const stopped = (name) => {
    const s = scenario(name);
    return s ? pct(s.stopped, s.attempts) : '—';
  };
  const stuffing = STUFFING.map(scenario).filter(Boolean);
  const worst = stuffing.length ? stuffing.reduce((a, s) => (s.stopped / s.attempts < a.stopped / a.attempts ? s : a)) : null;
  const b10 = bucket('10-29');
  const b30 = bucket('30+');
  const date = doc.run?.at?.slice(0, 10) ?? path.basename(file).slice(0, 10);
  const commit = doc.run?.commit ? `${doc.run.commit.slice(0, 7)}${doc.run.dirty ? '+' : ''}` : '—';
  const integration = { client: 'client', opaque: 'opaque tokens', none: 'headers only' }[doc.options?.tokens] ?? '?';
  return {
    sort: `${date} ${doc.run?.at ?? ''} ${file}`,
    cells: [
      date,
      commit,
      path.basename(file, '.json'),
      integration,
      `${b10 ? pct(b10.friction, b10.logins) : '—'} / ${b30 ? pct(b30.friction, b30.logins) : '—'}`,
      pct(f.legit.denied, f.legit.logins),
      f.legit.waveSignups ? pct(f.legit.waveSignupFriction, f.legit.waveSignups) : '—',
      `${stopped('targeted')} / ${stopped('very_targeted')}`,
      worst ? `${pct(worst.stopped, worst.attempts)} (${worst.scenario})` : '—',
      typeof f.auc === 'number' ? f.auc.toFixed(4) : '—',
    ],
  };
}

const rows = [];
for (const name of fs.readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
  let doc;
  try {
    doc = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
  } catch {
    continue;
  }
  const r = row(name, doc);
  if (r) rows.push(r);
}
rows.sort((a, b) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0));
const head = ['date', 'commit', 'run', 'integration', 'friction, 10–29 / 30+ logins', 'denied', 'real sign-ups in a wave stopped', 'targeted / very targeted stopped', 'least-stopped stuffing or bots', 'AUC'];
process.stdout.write(`| ${head.join(' | ')} |\n|${head.map(() => '---').join('|')}|\n`);
for (const r of rows) process.stdout.write(`| ${r.cells.join(' | ')} |\n`);
