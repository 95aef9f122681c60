#!/usr/bin/env node
/**
 * `npm run mutate [-- group …]`: one Stryker run per group of stryker.groups.mjs (all of them when
 * none is named), each against only its own tests and with its own incremental file, at the lowest
 * CPU priority. Prints the mutation score per module as a Markdown table (the README's) and exits
 * non-zero when any group is under the break threshold of stryker.config.mjs or fails to run.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { MUTATION_GROUPS } from '../stryker.groups.mjs';

// Arguments naming a group select it; the others go to Stryker (`-- aggregate --concurrency 2`).
const args = process.argv.slice(2);
const names = args.filter((a) => a in MUTATION_GROUPS);
const extra = args.filter((a) => !(a in MUTATION_GROUPS));
// A word that is neither a group nor an option's value is a misspelt group: running every group
// instead would take over an hour.
const unknown = args.filter((a, i) => !(a in MUTATION_GROUPS) && !a.startsWith('-') && !args[i - 1]?.startsWith('-'));
if (unknown.length > 0) {
  console.error(`mutate: no group ${unknown.join(', ')}; the groups are ${Object.keys(MUTATION_GROUPS).join(', ')}`);
  process.exit(2);
}
const groups = names.length > 0 ? names : Object.keys(MUTATION_GROUPS);
const stryker = new URL('../node_modules/@stryker-mutator/core/bin/stryker.js', import.meta.url).pathname;

function runGroup(group) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [stryker, 'run', ...extra], {
      stdio: 'inherit',
      env: { ...process.env, HANGAR_MUTATE: group },
    });
    try {
      os.setPriority(child.pid, 19);
    } catch {
      // Not permitted here: run at normal priority.
    }
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

/** Stryker's mutation score: detected (killed or timed out) over all valid mutants. */
function scores(report) {
  return Object.entries(report.files).map(([file, { mutants }]) => {
    const count = (...states) => mutants.filter((m) => states.includes(m.status)).length;
    const detected = count('Killed', 'Timeout');
    const valid = detected + count('Survived', 'NoCoverage');
    return { file, detected, survived: count('Survived'), noCoverage: count('NoCoverage'), score: valid ? (100 * detected) / valid : 100 };
  });
}

const rows = [];
let failed = 0;
for (const group of groups) {
  const code = await runGroup(group);
  if (code !== 0) failed++;
  try {
    const report = JSON.parse(readFileSync(`reports/mutation/${group}.json`, 'utf8'));
    for (const row of scores(report)) rows.push({ group, ...row });
  } catch {
    rows.push({ group, file: '(no report)', detected: 0, survived: 0, noCoverage: 0, score: 0 });
  }
}
console.log('\n| module | score | killed | survived | no coverage |\n|---|---|---|---|---|');
for (const r of rows) console.log(`| \`${r.file}\` | ${r.score.toFixed(1)}% | ${r.detected} | ${r.survived} | ${r.noCoverage} |`);
process.exit(failed > 0 ? 1 : 0);
