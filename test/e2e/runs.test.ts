import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TEAM, makeRepo } from '../coderun/support/fixture.js';
import { agentScript, approve, type ScriptedModel, startScriptedModel, write } from '../coderun/support/scripted-model.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * The coding-run views in a real browser against a real server, a real git repository and a
 * scripted model on loopback: start a run, approve its plan, watch the board, the review queue
 * and the gates; the teams page; settings with read-only keys.
 */

let model: ScriptedModel;
/** The whole platform (the UI needs all of it), plus the coding-run session token. */
let server: TestServer & { token: string; api: TestServer['request'] };
let repo: string;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
  model = await startScriptedModel((c) => {
    if (c.kind === 'planner') {
      return {
        tool_calls: [
          {
            name: 'submit_plan',
            arguments: {
              summary: 'one health route',
              tasks: [{ id: 'T1', title: 'health route', squad: 'api', files: ['src/api/health.mjs', 'test/api/h.test.mjs'] }],
            },
          },
        ],
      };
    }
    // The reviewer takes its time, so the review queue is visible while it decides.
    if (c.kind === 'reviewer') return { ...approve, delayMs: 1500 };
    return agentScript(
      [
        write('src/api/health.mjs', 'export const ok = true;\n'),
        write(
          'test/api/h.test.mjs',
          "import test from 'node:test';\nimport assert from 'node:assert';\nimport { ok } from '../../src/api/health.mjs';\ntest('ok', () => assert.ok(ok));\n",
        ),
      ],
      c,
    );
  });
  const running = await startTestServer({
    files: { 'teams/api.json': JSON.stringify(API_TEAM) },
    settings: {
      model: { baseUrl: model.baseUrl, model: 'small-model', retries: 0, timeoutMs: 10_000 },
      code: { repo, mcp_servers: [{ name: 'fs' }], command_timeout_ms: 20_000 },
    } as never,
  });
  // Handed over in a file only the user can read (core/coderun/subsystem.ts).
  const { token } = JSON.parse(await readFile(path.join(running.root, '.hangar', 'code-session.json'), 'utf8')) as { token: string };
  const api: TestServer['request'] = (pathname, init = {}) =>
    running.request(pathname, { ...init, headers: { ...(init.headers as Record<string, string>), 'x-hangar-session': token } });
  server = Object.assign(running, { token, api });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await model?.close();
  if (repo) await rm(repo, { recursive: true, force: true });
});

/** Opens a view through a one-time login link, as the window and the printed link do. */
function openSignedIn(route: string): Promise<Page> {
  return open(`?login=${server.ctx.services.get('loginLinks').mint().code}${route}`);
}

/** Every new page is a new tab: without a login link the session token is asked for once per tab. */
async function giveSession(p: Page) {
  await p.getByRole('heading', { name: 'Coding runs need the session token' }).waitFor();
  await p.getByLabel('Session token').fill(server.token);
  await p.getByRole('button', { name: 'Use token' }).click();
}

describe('coding-run views', () => {
  it('starts a run, approves its plan and follows it on the board to green', async () => {
    const p = await open('#/runs');
    // Pasting the token (from .hangar/code-session.json) still works.
    await giveSession(p);
    await p.getByLabel('What should the teams build?').fill('add a health route');
    await p.getByRole('button', { name: 'Start run' }).click();

    // The run page: planned, waiting for approval, the task ready on the board.
    await p.locator('[data-testid="run-status"]', { hasText: 'awaiting_approval' }).waitFor({ timeout: 15_000 });
    const board = p.getByTestId('run-board');
    await board.locator('[data-column="ready_to_dev"] [data-task="T1"]').waitFor();
    expect(await board.locator('h3').allTextContents()).toEqual([
      expect.stringContaining('Ready to dev'),
      expect.stringContaining('In progress'),
      expect.stringContaining('In review'),
      expect.stringContaining('To scope'),
      expect.stringContaining('Done'),
    ]);

    await p.getByRole('button', { name: 'Approve plan and start' }).click();
    // While the reviewer decides, the task is in review with the review_pending badge.
    await p.getByTestId('review-pending').waitFor({ timeout: 15_000 });
    expect(await board.locator('[data-column="in_review"] [data-task="T1"]').count()).toBe(1);
    await p.screenshot({ path: path.join(OUTPUT, 'runs-review.png'), fullPage: true });

    await p.locator('[data-testid="run-status"]', { hasText: 'succeeded' }).waitFor({ timeout: 30_000 });
    await board.locator('[data-column="done"] [data-task="T1"]').waitFor();
    expect(await p.getByTestId('review-pending').count()).toBe(0);
    expect(await p.getByTestId('waves').textContent()).toContain('Wave 1: T1');
    expect(await p.getByTestId('gates').textContent()).toMatch(/green\s*api/);
    await p.screenshot({ path: path.join(OUTPUT, 'runs-board.png'), fullPage: true });
    // The run is listed in the sidebar.
    await p.locator('[data-kind="run"] a').first().waitFor();
  });

  it('edits the plan at the approval gate, shows a refused edit, then approves the edited plan', async () => {
    const p = await openSignedIn('#/runs');
    await p.getByLabel('What should the teams build?').fill('add a health route again');
    await p.getByRole('button', { name: 'Start run' }).click();
    await p.locator('[data-testid="run-status"]', { hasText: 'awaiting_approval' }).waitFor({ timeout: 15_000 });
    const runId = decodeURIComponent(new URL(p.url()).hash.split('/').pop()!);
    const plan = async () =>
      (await server.api(`/api/runs/${encodeURIComponent(runId)}/plan`)).body as {
        tasks: { id: string; title: string; squad: string | null; dependencies: string[] }[];
      };

    const editor = p.getByTestId('plan-editor');
    const t1 = editor.locator('li.plan-task[data-task="T1"]');
    await t1.waitFor();
    expect(await t1.getByLabel('Title').inputValue()).toBe('health route');
    expect(await t1.getByLabel('Squad').inputValue()).toBe('api');

    // A task whose files team api owns cannot leave team api: the server refuses and says why.
    await t1.getByLabel('Squad').selectOption('');
    const approveButton = p.getByRole('button', { name: 'Approve plan and start' });
    // Unsaved edits hold the approval back.
    await p.locator('button:disabled', { hasText: 'Approve plan and start' }).waitFor();
    await p.getByText('Save or discard the plan edits before approving.').waitFor();
    await editor.getByRole('button', { name: 'Save plan' }).click();
    const refused = editor.getByRole('alert');
    await refused.waitFor();
    expect(await refused.textContent()).toBe("Edit refused — 422: task T1 cannot stay with team 'none': its files are owned by team 'api'");
    expect((await plan()).tasks).toEqual([expect.objectContaining({ id: 'T1', squad: 'api' })]);
    await p.getByRole('heading', { name: 'Plan awaiting approval' }).evaluate((h) => h.scrollIntoView({ block: 'start' }));
    await p.screenshot({ path: path.join(OUTPUT, 'runs-plan-refused.png') });

    // Fix it, rename the task and add a second one that depends on it.
    await t1.getByLabel('Squad').selectOption('api');
    await t1.getByLabel('Title').fill('health and readiness route');
    await editor.getByRole('button', { name: '+ Task' }).click();
    const t2 = editor.locator('li.plan-task').nth(1);
    expect(await t2.getByLabel('Id').inputValue()).toBe('T2');
    await t2.getByLabel('Title').fill('readiness route');
    await t2.getByLabel('Files').fill('src/api/ready.mjs');
    await t2.getByLabel('Depends on').fill('T1');
    await editor.getByRole('button', { name: 'Save plan' }).click();
    await editor.getByRole('status').filter({ hasText: 'Plan saved.' }).waitFor();
    expect((await plan()).tasks).toEqual([
      expect.objectContaining({ id: 'T1', title: 'health and readiness route', squad: 'api' }),
      expect.objectContaining({ id: 'T2', title: 'readiness route', squad: 'api', dependencies: ['T1'] }),
    ]);
    // The board shows the edited plan's cards.
    const board = p.getByTestId('run-board');
    await board.locator('[data-column="ready_to_dev"] [data-task="T2"]', { hasText: 'readiness route' }).waitFor();
    expect(await board.locator('[data-task="T1"]').textContent()).toContain('health and readiness route');
    await p.getByRole('heading', { name: 'Plan awaiting approval' }).evaluate((h) => h.scrollIntoView({ block: 'start' }));
    await p.screenshot({ path: path.join(OUTPUT, 'runs-plan-edit.png') });

    // Remove the new task again, then approve: the run starts on the edited plan.
    await editor.locator('li.plan-task[data-task="T2"]').getByLabel('Remove').check();
    await editor.getByRole('button', { name: 'Save plan' }).click();
    await editor.locator('li.plan-task[data-task="T2"]').waitFor({ state: 'detached' });
    expect((await plan()).tasks.map((t) => t.id)).toEqual(['T1']);
    await approveButton.click();
    await p.getByTestId('plan-editor').waitFor({ state: 'detached', timeout: 15_000 });
    await p.locator('[data-testid="run-status"]', { hasText: 'succeeded' }).waitFor({ timeout: 30_000 });
    expect(await board.locator('[data-task="T1"]').textContent()).toContain('health and readiness route');
  });

  it('shows the teams', async () => {
    const p = await openSignedIn('#/teams');
    const team = p.getByTestId('teams').locator('li', { hasText: 'api' }).first();
    await team.waitFor();
    expect(await team.textContent()).toContain('HTTP API');
    expect(await team.textContent()).toContain('src/api/**');
  });

  it('edits settings, with the keys the server keeps read-only shown read-only', async () => {
    const p = await openSignedIn('#/settings');
    const readOnly = p.getByLabel(/^mcp_servers/);
    await readOnly.waitFor();
    expect(await readOnly.getAttribute('readonly')).not.toBeNull();
    expect(await readOnly.inputValue()).toBe('[{"name":"fs"}]');
    await p.getByLabel(/^max_parallel/).fill('3');
    await p.getByRole('button', { name: 'Save settings' }).click();
    await p.getByText('Saved.').waitFor();
    expect((await server.api('/api/config')).body.max_parallel).toBe(3);
    await p.screenshot({ path: path.join(OUTPUT, 'runs-settings.png') });
  });

  it('asks again when the session token is refused', async () => {
    const p = await open('#/runs');
    await p.getByLabel('Session token').fill('not-the-token');
    await p.getByRole('button', { name: 'Use token' }).click();
    await p.getByText('The server refused that session token').waitFor();
  });
});
