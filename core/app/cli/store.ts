/**
 * `hangar store copy --from A --to B`: moves a store between the embedded SQLite file and
 * PostgreSQL, either way (core/storage/copy.ts says what is copied and why it is idempotent).
 * A side is a `postgres://` URL (or a `${ENV}` reference to one) or the path of a `hangar.db` file.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { resolveSecret } from '../../kernel/settings.js';
import { type CopyEndpoint, type CopyProgress, copyStore } from '../../storage/copy.js';
import { isPostgresUrl, PostgresStore } from '../../storage/postgres-store.js';
import { SqliteStore } from '../../storage/sqlite-store.js';
import { type CliIO, CommandError, report, UsageError } from './convention.js';

export const STORE_HELP = `Usage: hangar store copy --from SOURCE --to TARGET

Copies every collection and log of one store into another: the embedded SQLite file to PostgreSQL
(team mode) or back. SOURCE and TARGET are each a postgres:// URL (or \${ENV_NAME} naming one) or
the path of a hangar.db file (a workspace's is .hangar/hangar.db). Records of the same id and log
keys of the same name are overwritten; what only the target holds stays, so running it again is safe.

Options:
  --from SOURCE   the store to read
  --to TARGET     the store to write (created and migrated if new)
  -h, --help`;

const defaultIO: CliIO & { progress?: (line: string) => void } = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  // A bar redrawn in place on a terminal; nothing when the output is a file or a pipe.
  progress: process.stderr.isTTY ? (line) => process.stderr.write(`\r\x1b[2K${line}`) : undefined,
};

async function openSide(spec: string, role: 'from' | 'to'): Promise<CopyEndpoint> {
  let resolved: string;
  try {
    resolved = resolveSecret(spec)!;
  } catch (err) {
    throw new UsageError((err as Error).message, `set it, or give --${role} a URL or a file`);
  }
  if (isPostgresUrl(resolved)) {
    const store = new PostgresStore(resolved);
    try {
      await store.ready();
    } catch (err) {
      await store.close();
      throw new CommandError((err as Error).message);
    }
    return store;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(resolved)) {
    throw new UsageError(`--${role} ${spec} is neither a postgres:// URL nor a file`, 'see hangar store --help');
  }
  if (role === 'from' && !existsSync(resolved)) {
    throw new UsageError(`--from ${resolved}: no such file`, 'a workspace keeps its store in .hangar/hangar.db');
  }
  return new SqliteStore(path.resolve(resolved));
}

const bar = (done: number, total: number) => {
  const width = 24;
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
};

export async function storeCli(argv: string[], io: CliIO & { progress?: (line: string) => void } = defaultIO): Promise<number> {
  let values: { from?: string; to?: string; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { from: { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    }));
  } catch (err) {
    return report(io, err, 'hangar store --help');
  }
  if (values.help || positionals.length === 0) {
    io.out(STORE_HELP);
    return values.help ? 0 : 2;
  }
  const opened: CopyEndpoint[] = [];
  try {
    if (positionals[0] !== 'copy' || positionals.length > 1) {
      throw new UsageError(`unknown store command '${positionals.join(' ')}'`, 'the one command is: hangar store copy --from … --to …');
    }
    if (!values.from || !values.to) throw new UsageError('store copy needs --from and --to', 'see hangar store --help');
    if (values.from === values.to) throw new UsageError('--from and --to name the same store', 'copy into another store');
    const from = await openSide(values.from, 'from');
    opened.push(from);
    const to = await openSide(values.to, 'to');
    opened.push(to);
    const describe = (store: CopyEndpoint) => store.describe().path;
    io.out(`copying ${describe(from)} → ${describe(to)}`);
    const progress: CopyProgress = ({ kind, name, done, total, finished }) => {
      if (finished) {
        io.progress?.('');
        io.out(`  ${kind} ${name}: ${done.toLocaleString('en')} ${kind === 'log' ? 'keys' : 'records'}`);
      } else io.progress?.(`  ${kind} ${name} ${bar(done, total)} ${done}/${total}`);
    };
    const counts = await copyStore(from, to, progress);
    const records = Object.values(counts.collections).reduce((a, b) => a + b, 0);
    const keys = Object.values(counts.logs).reduce((a, b) => a + b, 0);
    io.out(
      `copied ${records.toLocaleString('en')} records in ${Object.keys(counts.collections).length} collections, ${keys.toLocaleString('en')} keys in ${Object.keys(counts.logs).length} logs and ${counts.tables.invocations.toLocaleString('en')} invocation records`,
    );
    return 0;
  } catch (err) {
    return report(io, err, 'hangar store --help');
  } finally {
    for (const store of opened) await store.close();
  }
}
