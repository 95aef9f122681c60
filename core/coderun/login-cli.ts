/**
 * `hangar login`: a fresh one-time login link for the Hangar already running on a workspace, for
 * when the printed one was used (another browser, a closed tab) or has expired — as
 * `jupyter server list` prints its URLs again.
 *
 * It proves it may ask by presenting the session token from `.hangar/code-session.json` (readable
 * only by its owner), and finds the server at the URL recorded there; when the server needs API
 * tokens it authenticates with the first configured one, which the link then hands to the browser.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { repositoryRoot } from '../../desktop/build.js';
import type { CliIO } from '../kernel/cli.js';
import { loadSettings, resolveSecret, SettingsError } from '../kernel/settings.js';
import { LOGIN_LINKS_PATH } from './login.js';
import { SESSION_FILE } from './subsystem.js';

export const LOGIN_HELP = `Usage: hangar login [--root DIR] [--config FILE] [--url URL]

Prints a fresh one-time login link for the Hangar running on the workspace (default: the same
workspace \`hangar\` serves). Each link works once and for 24 hours.

Options:
  --root DIR      workspace folder
  --config FILE   settings file (default: DIR/hangar.config.json)
  --url URL       the server (default: the URL recorded in DIR/.hangar/${SESSION_FILE})
  -h, --help`;

const defaultIO: CliIO = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

export async function loginCli(argv: string[], io: CliIO = defaultIO): Promise<number> {
  let values: { root?: string; config?: string; url?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { root: { type: 'string' }, config: { type: 'string' }, url: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    io.err(`hangar login: ${(err as Error).message}\n${LOGIN_HELP}`);
    return 2;
  }
  if (values.help) {
    io.out(LOGIN_HELP);
    return 0;
  }
  let settings;
  try {
    settings = loadSettings({ defaultRoot: repositoryRoot(), configFile: values.config, flags: { root: values.root, window: false } });
  } catch (err) {
    if (err instanceof SettingsError) {
      io.err(`hangar login: ${err.message}`);
      return 2;
    }
    throw err;
  }
  const file = path.join(settings.root, '.hangar', SESSION_FILE);
  let session: { token?: string; url?: string };
  try {
    session = JSON.parse(await readFile(file, 'utf8')) as typeof session;
  } catch {
    io.err(`hangar login: cannot read ${file}; is Hangar running on this workspace? (start it with \`npm start\` or \`hangar --root ${settings.root}\`)`);
    return 1;
  }
  const base = (values.url ?? session.url ?? `http://${settings.host}:${settings.port}`).replace(/\/$/, '');
  const headers: Record<string, string> = { 'x-hangar-session': session.token ?? '' };
  const bearer = firstToken(settings.auth.tokens);
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  let res: Response;
  try {
    res = await fetch(base + LOGIN_LINKS_PATH, { method: 'POST', headers });
  } catch {
    io.err(`hangar login: no Hangar answers at ${base} (not running? pass --url)`);
    return 1;
  }
  const body = (await res.json().catch(() => ({}))) as { url?: string; detail?: unknown };
  if (res.status !== 201 || !body.url) {
    const why = res.status === 401 ? `the server refused the session token in ${file} (it changes at every launch: is this the workspace it serves?)` : `${res.status}: ${String(body.detail ?? '')}`;
    io.err(`hangar login: ${why}`);
    return 1;
  }
  io.out(`login link: ${body.url} (works once)`);
  return 0;
}

/** The first configured API token that resolves (`${ENV}` references may be unset here). */
function firstToken(tokens: Record<string, string>): string | undefined {
  for (const ref of Object.values(tokens)) {
    try {
      const secret = resolveSecret(ref);
      if (secret) return secret;
    } catch {
      // unset variable: try the next
    }
  }
  return undefined;
}
