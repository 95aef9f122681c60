/**
 * How a client command (`hangar code …`, `hangar notebook list`) reaches a server for its
 * workspace: the running one, found through its runtime file (core/kernel/server-files.ts), as
 * `jupyter` clients find their server; only when none runs, a headless server started in this
 * process for the command, said on stderr so the person knows why it took longer and that nothing
 * stays running.
 */

import { Logger } from '../../kernel/log.js';
import { serverFor } from '../../kernel/server-files.js';
import { loadSettings, resolveSecret, type Settings, SettingsError } from '../../kernel/settings.js';
import { StartupError, startServer } from '../server.js';
import type { CliIO } from './convention.js';
import { CommandError, UsageError } from './convention.js';

export interface Attached {
  url: string;
  /** Coding-run session token (header X-Hangar-Session). */
  session: string;
  /** API bearer token, when the workspace's settings require one. */
  bearer?: string;
  /** True when this command started the server (it stops with `close`). */
  started: boolean;
  close(): Promise<void>;
}

export interface AttachOptions {
  root: string;
  configFile?: string;
  /** The command, for the stderr line (`hangar code`). */
  command: string;
  io: Pick<CliIO, 'err'>;
  /**
   * A repository the server started here may work on beyond `code.repos`: the one named on this
   * command line (code.repos fences what HTTP callers may name; here the caller is the user at the
   * shell). A running server keeps its own fence.
   */
  trustRepo?: string;
}

function settingsOf(options: AttachOptions): Settings {
  try {
    const loaded = loadSettings({
      defaultRoot: options.root,
      configFile: options.configFile,
      flags: { root: options.root, port: 0, window: false, watch: false, logLevel: 'warn' },
    });
    if (!options.trustRepo) return loaded;
    const repos = [...((loaded.code as { repos?: string[] } | undefined)?.repos ?? []), options.trustRepo];
    return { ...loaded, code: { ...loaded.code, repos } } as Settings;
  } catch (err) {
    if (err instanceof SettingsError) throw new UsageError(err.message, 'fix hangar.config.json or the HANGAR_* variable it names');
    throw err;
  }
}

export async function attachOrStart(options: AttachOptions): Promise<Attached> {
  const settings = settingsOf(options);
  const bearer = firstToken(settings.auth.tokens);
  const running = await serverFor(settings.root);
  if (running?.session) {
    return { url: running.url, session: running.session, bearer, started: false, close: async () => undefined };
  }
  options.io.err(
    `${options.command}: no Hangar is running on ${settings.root}; started one in this process for this command (keep one running with \`hangar --root ${settings.root}\` and later commands use it)`,
  );
  let server;
  try {
    // The server's own warnings go to stderr; its info lines would bury the command's output.
    server = await startServer(settings, { logger: new Logger('warn', (line) => options.io.err(line)) });
  } catch (err) {
    if (err instanceof StartupError) throw new CommandError(err.message);
    throw err;
  }
  await server.discovered;
  return {
    url: server.url,
    session: server.ctx.clientTokens.session ?? '',
    bearer,
    started: true,
    close: () => server.close(),
  };
}

/** The first configured API token that resolves (`${ENV}` references may be unset here). */
export function firstToken(tokens: Record<string, string>): string | undefined {
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
