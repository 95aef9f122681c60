/**
 * `hangar login`: a fresh one-time login link for the Hangar already running on a workspace, for
 * when the printed one was used (another browser, a closed tab) or has expired — as
 * `jupyter server list` prints its URLs again.
 *
 * It finds the server through its runtime file (`.hangar/servers/<pid>.json`, readable only by
 * its owner) and proves it may ask by presenting the session token recorded there; when the server
 * needs API tokens it authenticates with the first configured one, which the link then hands to
 * the browser. With several servers on the workspace it asks the newest (`--url` picks another).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { repositoryRoot } from '../../../desktop/build.js';
import { LOGIN_LINKS_PATH } from '../../coderun/login.js';
import { SESSION_FILE } from '../../coderun/session.js';
import { listServers } from '../../kernel/server-files.js';
import { loadSettings, SettingsError } from '../../kernel/settings.js';
import { firstToken } from './attach.js';
import type { CliIO } from './convention.js';
import { CommandError, report, UsageError } from './convention.js';

export const LOGIN_HELP = `Usage: hangar login [--root DIR] [--config FILE] [--url URL]

Prints a fresh one-time login link for the Hangar running on the workspace (default: the same
workspace \`hangar\` serves). Each link works once and for 24 hours.

Options:
  --root DIR      workspace folder
  --config FILE   settings file (default: DIR/hangar.config.json)
  --url URL       the server (default: the newest Hangar running on the workspace, from
                  DIR/.hangar/servers/)
  -h, --help`;

const defaultIO: CliIO = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

export async function loginCli(argv: string[], io: CliIO = defaultIO): Promise<number> {
  try {
    return await login(argv, io);
  } catch (err) {
    return report(io, err, 'hangar login --help');
  }
}

async function login(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { root: { type: 'string' }, config: { type: 'string' }, url: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    io.out(LOGIN_HELP);
    return 0;
  }
  let settings;
  try {
    settings = loadSettings({ defaultRoot: repositoryRoot(), configFile: values.config, flags: { root: values.root, window: false } });
  } catch (err) {
    if (err instanceof SettingsError) throw new UsageError(err.message, 'fix hangar.config.json or the HANGAR_* variable it names');
    throw err;
  }
  const servers = await listServers(settings.root);
  const chosen = values.url ? servers.find((s) => s.url === values.url!.replace(/\/$/, '')) : servers.at(-1);
  let session = chosen?.session;
  const base = (values.url ?? chosen?.url ?? '').replace(/\/$/, '');
  if (!session) {
    // A server found only by --url (another host name for it, an older Hangar): the workspace's session file.
    const file = path.join(settings.root, '.hangar', SESSION_FILE);
    session = await readFile(file, 'utf8').then(
      (text) => (JSON.parse(text) as { token?: string }).token,
      () => undefined,
    );
  }
  if (!base || !session) {
    throw new CommandError(
      `no Hangar is running on ${settings.root}`,
      `start it with \`npm start\` or \`hangar --root ${settings.root}\`; \`hangar list\` shows the running servers`,
    );
  }
  const headers: Record<string, string> = { 'x-hangar-session': session };
  const bearer = firstToken(settings.auth.tokens);
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  let res: Response;
  try {
    res = await fetch(base + LOGIN_LINKS_PATH, { method: 'POST', headers });
  } catch {
    throw new CommandError(
      `no Hangar answers at ${base}`,
      'is it running? `hangar list` shows the running servers; pass --url for another',
    );
  }
  const body = (await res.json().catch(() => ({}))) as { url?: string; detail?: unknown };
  if (res.status !== 201 || !body.url) {
    if (res.status === 401)
      throw new CommandError(
        `the server at ${base} refused the session token`,
        'is it serving this workspace? pass --root the workspace it serves',
      );
    throw new CommandError(`the server at ${base} answered ${res.status}: ${String(body.detail ?? '')}`);
  }
  io.out(`login link: ${body.url} (works once)`);
  return 0;
}
