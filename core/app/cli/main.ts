import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { browserToken, loginUrl } from '../../coderun/login.js';
import { recordServerUrl } from '../../coderun/session.js';
import { listServers } from '../../kernel/server-files.js';
import { loadSettings, SettingsError } from '../../kernel/settings.js';
import { PLATFORM_NAME, VERSION } from '../../kernel/version.js';
import { StartupError, startServer } from '../server.js';
import { openAppWindow, type WindowOutcome } from '../window.js';
import { COMMANDS } from './commands.js';
import { type CliIO, errorLine } from './convention.js';

export const HELP = `${PLATFORM_NAME} ${VERSION} — local-first agent platform

Usage:
  hangar [options]                 start the platform (desktop window unless --no-window)
  hangar notebook <command> ...    reactive notebooks (hangar notebook --help)
  hangar code <command> ...        coding runs: run, teams, preselect, calibrate (hangar code --help)
  hangar store copy ...            copy a store between SQLite and PostgreSQL, either way (hangar store --help)
  hangar login [--root DIR]        print a fresh one-time login link for the running server
  hangar list [--root DIR]         the running servers of a workspace (URL, pid, start time)
  hangar init [DIR]                write a new workspace (package.json, tsconfig.json, examples)

Options:
  --no-window        run headless: serve the API and UI, open no window
  --port N           port to listen on (default 8787; 0 picks a free one)
  --host H           interface to bind (default 127.0.0.1; beyond loopback a token is required)
  --root DIR         workspace folder (default: the repository's own example workspace)
  --config FILE      settings file (default: DIR/hangar.config.json)
  -h, --help         show this help
  -v, --version      print the version

Settings come from the config file, then HANGAR_* environment variables
(HANGAR_PORT, HANGAR_MODEL__BASE_URL, ...), then flags.

Errors are one line on stderr, \`hangar: <what> (<how to fix>)\`; exit 2 for usage errors, 1 for
failures, the same in every subcommand.`;

/** The repository folder, which is also the default workspace. */
function repositoryRoot(): string {
  // Both core/app/cli/main.ts (tests) and dist/cli.cjs (built) sit at a fixed depth below it.
  const here = path.dirname(fileURLToPath(import.meta.url));
  return path.basename(here) === 'dist' ? path.dirname(here) : path.resolve(here, '..', '..', '..');
}

const defaultIO: CliIO = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

/** Runs the CLI; resolves with an exit code when it is done, or never for a running server. */
export async function main(argv: string[], io: CliIO = defaultIO): Promise<number> {
  const command = argv[0] && Object.hasOwn(COMMANDS, argv[0]) ? COMMANDS[argv[0]] : undefined;
  if (command) return (await command())(argv.slice(1));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'no-window': { type: 'boolean' },
        port: { type: 'string' },
        host: { type: 'string' },
        root: { type: 'string' },
        config: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    io.err(errorLine((err as Error).message, 'see hangar --help'));
    return 2;
  }
  if (values.help) {
    io.out(HELP);
    return 0;
  }
  if (values.version) {
    io.out(VERSION);
    return 0;
  }

  let settings;
  try {
    settings = loadSettings({
      defaultRoot: repositoryRoot(),
      configFile: values.config as string | undefined,
      flags: {
        port: values.port,
        host: values.host,
        root: values.root,
        window: values['no-window'] ? false : undefined,
      },
    });
  } catch (err) {
    if (err instanceof SettingsError) {
      io.err(errorLine(err.message, 'fix hangar.config.json, the HANGAR_* variable or the flag it names'));
      return 2;
    }
    throw err;
  }

  let running;
  try {
    running = await startServer(settings);
  } catch (err) {
    if (err instanceof StartupError) {
      // The port is taken by a Hangar of this very workspace: say so, as it is what the person
      // wants to open (a second `npm start` in another terminal), rather than a bare port clash.
      const already = (await listServers(settings.root)).find((s) => s.port === settings.port);
      if (already) {
        io.err(
          errorLine(
            `Hangar is already running on this workspace at ${already.url}/ui/ (pid ${already.pid})`,
            'open it; `hangar login` prints a login link; or start another with --port 0',
          ),
        );
        return 1;
      }
      io.err(errorLine(err.message, err.how));
      return 1;
    }
    throw err;
  }
  // Signals are handled from the moment the server listens, so a stop during discovery is clean too.
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        io.err(errorLine(`${signal} again, exiting now`, 'in-flight requests were cut off'));
        resolve(1);
        return;
      }
      stopping = true;
      running.ctx.log.info(`${signal} received, shutting down`);
      running.close().then(
        () => resolve(0),
        (err: unknown) => {
          io.err(errorLine(`shutdown failed: ${String(err)}`, 'the workspace state was flushed as far as it got; start again to recover'));
          resolve(1);
        },
      );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });

  await running.discovered;
  recordServerUrl(running.ctx, running.url);
  const agents = running.ctx.registry.list('agent').length;
  // The UI's address, not the API root: a terminal makes it a link, and a browser should land in the
  // UI (as Vite and Jupyter print the page to open). API clients find the root from it readily.
  io.out(`${PLATFORM_NAME} ${VERSION} ready at ${running.url}/ui/ (workspace ${settings.root}, ${agents} agent${agents === 1 ? '' : 's'})`);
  const links = running.ctx.services.get('loginLinks');
  // The window gets a login code of its own (its exchange is how the page is seen to load), so it
  // never uses up the printed one. The Electron shell mints its token synchronously inside
  // openAppWindow, before the printed link decides whether it must carry an API token.
  const windowCode = settings.window ? links.mint(browserToken(running.ctx)) : undefined;
  const opening = windowCode
    ? openAppWindow(running.url, {
        runtimeTokens: running.ctx.runtimeTokens,
        stateDir: running.ctx.paths.state,
        login: { code: windowCode.code, url: loginUrl(running.url, windowCode.code), used: windowCode.used },
      })
    : undefined;
  const printed = loginUrl(running.url, links.mint(browserToken(running.ctx)).code);
  io.out(loginLine(printed));
  // Not awaited: a stop during the wait must not be held up by it.
  void opening?.then((outcome) => io.out(windowLine(outcome, printed)));
  return stopped;
}

/** The printed login link (core/coderun/login.ts says why it is a one-time code). */
export function loginLine(link: string): string {
  return `login link: ${link} (works once; \`hangar login\` prints another)`;
}

/** What the window did, said plainly; when it did not show the UI, which link to open instead. */
export function windowLine(outcome: WindowOutcome, link: string): string {
  if (!outcome.opened) return `window: not opened — ${outcome.reason}; open ${link} in a browser`;
  if (outcome.confirmed) return `window: opened with ${outcome.via}`;
  return `window: ${outcome.via} started but its page has not loaded yet; if no window shows, open ${link} in a browser`;
}

const invokedDirectly = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
