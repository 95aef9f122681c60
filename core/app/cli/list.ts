/**
 * `hangar list`: the running servers, read from their runtime files (core/kernel/server-files.ts),
 * as `jupyter server list` prints its servers. Files left by processes that are gone are removed
 * on the way.
 *
 * Decision: without `--root` it looks at the workspace `hangar` would serve (settings and
 * HANGAR_ROOT, else the repository's example workspace) and at the current folder; with `--root DIR`
 * at DIR and every workspace below it (four levels, node_modules and dot-folders skipped), since
 * servers are recorded per workspace rather than in one per-user folder.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { listServers, type ServerInfo, workspacesUnder } from '../../kernel/server-files.js';
import { loadSettings, SettingsError } from '../../kernel/settings.js';
import type { CliIO } from './convention.js';
import { report, UsageError } from './convention.js';

export const LIST_HELP = `Usage: hangar list [--root DIR] [--json]

Prints the running Hangar servers: URL of the UI, workspace, pid and start time.

Options:
  --root DIR   look in DIR and every workspace below it (default: the workspace \`hangar\` serves,
               and the current folder)
  --json       one JSON array of the servers' runtime files (they hold the session token)
  -h, --help`;

const defaultIO: CliIO = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

export async function listCli(argv: string[], defaultRoot: string, io: CliIO = defaultIO): Promise<number> {
  let values: { root?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { root: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    return report(io, err, 'hangar list --help');
  }
  if (values.help) {
    io.out(LIST_HELP);
    return 0;
  }
  let workspaces: string[];
  if (values.root) {
    workspaces = workspacesUnder(values.root);
  } else {
    let served: string;
    try {
      served = loadSettings({ defaultRoot, flags: { window: false } }).root;
    } catch (err) {
      if (err instanceof SettingsError)
        return report(io, new UsageError(err.message, 'fix hangar.config.json or the HANGAR_* variable it names'));
      throw err;
    }
    workspaces = [...new Set([served, path.resolve(process.cwd())])];
  }
  const servers: ServerInfo[] = [];
  for (const workspace of workspaces) servers.push(...(await listServers(workspace)));
  if (values.json) {
    io.out(JSON.stringify(servers, null, 2));
    return 0;
  }
  if (!servers.length) {
    io.out(
      `no Hangar running on ${values.root ? `${path.resolve(values.root)} or below` : workspaces.join(' or ')} (start one with \`hangar --root DIR\`)`,
    );
    return 0;
  }
  for (const s of servers) io.out(`${s.url}/ui/  ${s.workspace}  (pid ${s.pid}, since ${s.started})`);
  return 0;
}
