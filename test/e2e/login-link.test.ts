import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginLine } from '../../core/app/cli/main.js';
import { browserToken, loginUrl } from '../../core/coderun/login.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { useUiBrowser } from './browser.js';

/**
 * The login link `hangar` prints, opened in a real browser against a real server: the Runs view
 * works without pasting anything, the code leaves the address bar, and a used link says what to do.
 */

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer();
}, 60_000);
afterAll(() => server?.stop());

/** The line the CLI prints at start (core/app/cli/main.ts), and the part of it after `/ui/`. */
function printedLink(s: TestServer): { line: string; route: string } {
  const line = loginLine(loginUrl(s.url, s.ctx.services.get('loginLinks').mint(browserToken(s.ctx)).code));
  const link = /^login link: (\S+) /.exec(line)![1]!;
  expect(link.startsWith(`${s.url}/ui/?login=`)).toBe(true);
  return { line, route: link.slice(`${s.url}/ui/`.length) };
}

describe('the printed login link', () => {
  it('opens the Runs view without pasting, and the code leaves the address bar', async () => {
    const { route } = printedLink(server);
    const p = await open(route);
    await p.getByRole('link', { name: 'Runs', exact: true }).first().click();
    await p.getByRole('heading', { name: 'Coding runs', exact: true }).waitFor();
    await p.getByLabel('What should the teams build?').waitFor();
    await p.getByText('No runs yet.').waitFor();
    expect(await p.getByRole('heading', { name: 'Coding runs need the session token' }).count()).toBe(0);
    expect(p.url()).toBe(`${server.url}/ui/#/runs`);
    // Kept for the tab, as a pasted token is.
    const session = (JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')) as { token: string }).token;
    expect(await p.evaluate(() => sessionStorage.getItem('hangar.code-session'))).toBe(session);
    // A reload keeps working: the tab stays signed in.
    await p.reload();
    await p.getByLabel('What should the teams build?').waitFor();
  });

  it('keeps the view a link points to when it carries a login code', async () => {
    const { route } = printedLink(server);
    const p = await open(`${route}#/teams`);
    await p.getByRole('heading', { name: 'Teams', exact: true }).waitFor();
    expect(p.url()).toBe(`${server.url}/ui/#/teams`);
    expect(await p.getByRole('heading', { name: 'Coding runs need the session token' }).count()).toBe(0);
  });

  it('refuses a used link with a message naming .hangar/code-session.json, and pasting the token still works', async () => {
    const { route } = printedLink(server);
    const code = new URLSearchParams(route.slice(1)).get('login')!;
    expect((await server.request('/api/login', { method: 'POST', json: { code } })).status).toBe(200);

    const p = await open(`${route}#/runs`);
    const alert = p.getByTestId('login-problem');
    await alert.waitFor();
    expect(await alert.textContent()).toBe(
      'this login link was already used (each link works once); read the session token in .hangar/code-session.json of the workspace, or run `hangar login` for a fresh link',
    );
    expect(p.url()).toBe(`${server.url}/ui/#/runs`);
    await p.getByRole('heading', { name: 'Coding runs need the session token' }).waitFor();
    const session = (JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')) as { token: string }).token;
    await p.getByLabel('Session token').fill(session);
    await p.getByRole('button', { name: 'Use token' }).click();
    await p.getByLabel('What should the teams build?').waitFor();
  });
});

describe('the printed login link on a server with API tokens', () => {
  let guarded: TestServer;
  const browser = useUiBrowser(() => guarded.url);
  beforeAll(async () => {
    guarded = await startTestServer({ settings: { auth: { tokens: { alice: 'alice-secret-token' } } } as never });
  }, 60_000);
  afterAll(() => guarded?.stop());

  it('also hands the browser an API token, so neither prompt appears', async () => {
    const { route } = printedLink(guarded);
    const p = await browser.open(`${route}#/runs`);
    await p.getByLabel('What should the teams build?').waitFor();
    await p.getByTestId('live-state').getByText('Live').waitFor();
    expect(await p.getByRole('heading', { name: 'This server needs an API token' }).count()).toBe(0);
    expect(await p.evaluate(() => sessionStorage.getItem('hangar.token'))).toBe(guarded.ctx.runtimeTokens.browser);
  });
});
