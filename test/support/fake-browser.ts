import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * Executables named `chromium` that behave like the real one does in the situations the window
 * code must tell apart. Real processes, placed first on PATH (or handed to the probe), each
 * recording its arguments and pid in `record.json` of its folder:
 * - `dies`: exits 1 at once, with what Debian's chromium prints as root (the wrapper-script and
 *   D-Bus noise first, then the reason);
 * - `loads`: stays up and does what the UI page does on load — POSTs the `?login=` code of its
 *   `--app` URL to /api/login;
 * - `hangs`: stays up and never loads the page;
 * - `hands-over`: exits 0 at once, as a second launch does when it passes the URL to a browser
 *   already running on the profile.
 */
export type FakeBrowserKind = 'dies' | 'loads' | 'hangs' | 'hands-over';

export interface FakeBrowser {
  dir: string;
  executable: string;
  /** What the fake was started with, once it has started. */
  record(): Promise<{ args: string[]; pid: number }>;
  /** Stops a fake that stays up, and removes its folder. */
  dispose(): Promise<void>;
}

/** Debian's chromium as root, verbatim but for pids and times. */
export const ROOT_STDERR = [
  '/usr/bin/chromium: 9: [: 25276510208: unexpected operator',
  '[8239:8267:1125/032107.520001:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket /run/dbus/system_bus_socket: No such file or directory',
  '[8239:8239:1125/032107.522281:ERROR:content/browser/zygote_host/zygote_host_impl_linux.cc:101] Running as root without --no-sandbox is not supported. See https://crbug.com/638180.',
].join('\n');

export async function fakeBrowser(kind: FakeBrowserKind): Promise<FakeBrowser> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-fake-browser-'));
  const executable = path.join(dir, 'chromium');
  const record = path.join(dir, 'record.json');
  const script = `
const fs = require('node:fs');
const args = process.argv.slice(2);
fs.writeFileSync(${JSON.stringify(record)}, JSON.stringify({ args, pid: process.pid }));
const kind = ${JSON.stringify(kind)};
if (kind === 'dies') { process.stderr.write(${JSON.stringify(ROOT_STDERR + '\n')}); process.exit(1); }
if (kind === 'hands-over') process.exit(0);
setInterval(() => {}, 60_000);
if (kind === 'loads') {
  const page = new URL(args.find((a) => a.startsWith('--app=')).slice(6));
  fetch(new URL('/api/login', page), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: page.searchParams.get('login') }) })
    .then((res) => process.stderr.write('login ' + res.status + '\\n'));
}
`;
  await writeFile(path.join(dir, 'fake.cjs'), script);
  // A shell script that runs node, as distribution wrappers of chromium are shell scripts too.
  await writeFile(executable, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(dir, 'fake.cjs'))} "$@"\n`);
  await chmod(executable, 0o755);
  const read = async () => JSON.parse(await readFile(record, 'utf8')) as { args: string[]; pid: number };
  return {
    dir,
    executable,
    record: read,
    async dispose() {
      const started = await read().catch(() => undefined);
      if (started) {
        try {
          process.kill(started.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
