import { describe, expect, it } from 'vitest';
import { loadSettings, redactSettings, resolveSecret, SettingsError } from '../../core/kernel/settings.js';
import { makeWorkspace } from '../support/server.js';

describe('settings', () => {
  it('has the documented defaults', async () => {
    const root = await makeWorkspace();
    const s = loadSettings({ defaultRoot: root, env: {} });
    expect(s).toMatchObject({ root, host: '127.0.0.1', port: 8787, window: true, tasks: { enabled: true } });
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('layers the config file, then HANGAR_* variables, then flags', async () => {
    const root = await makeWorkspace({ 'hangar.config.json': JSON.stringify({ port: 9001, logLevel: 'warn', rateLimit: { max: 5 } }) });
    expect(loadSettings({ defaultRoot: root, env: {} })).toMatchObject({ port: 9001, logLevel: 'warn', rateLimit: { max: 5 } });
    const env = {
      HANGAR_PORT: '9002',
      HANGAR_RATE_LIMIT__MAX: '7',
      HANGAR_MODEL__BASE_URL: 'http://127.0.0.1:1/v1',
      HANGAR_TASKS__ENABLED: 'false',
    };
    expect(loadSettings({ defaultRoot: root, env })).toMatchObject({
      port: 9002,
      rateLimit: { max: 7 },
      model: { baseUrl: 'http://127.0.0.1:1/v1' },
      tasks: { enabled: false },
    });
    expect(loadSettings({ defaultRoot: root, env, flags: { port: '9003' } }).port).toBe(9003);
  });

  it('reads --config FILE instead of the workspace file', async () => {
    const root = await makeWorkspace({ 'other.json': JSON.stringify({ host: 'localhost' }) });
    expect(loadSettings({ defaultRoot: root, env: {}, configFile: `${root}/other.json` }).host).toBe('localhost');
    expect(() => loadSettings({ defaultRoot: root, env: {}, configFile: `${root}/missing.json` })).toThrow(/config file not found/);
  });

  it('names the bad key and where it came from in one line', async () => {
    const root = await makeWorkspace({ 'hangar.config.json': JSON.stringify({ tasks: { concurrency: 0 } }) });
    const message = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        expect(err).toBeInstanceOf(SettingsError);
        return (err as Error).message;
      }
      throw new Error('did not throw');
    };
    expect(message(() => loadSettings({ defaultRoot: root, env: {} }))).toMatch(
      /^invalid setting tasks\.concurrency \(from hangar\.config\.json\): /,
    );
    const empty = await makeWorkspace();
    expect(message(() => loadSettings({ defaultRoot: empty, env: { HANGAR_PORT: '70000' } }))).toMatch(
      /^invalid setting port \(from HANGAR_PORT\): Too big/,
    );
    expect(message(() => loadSettings({ defaultRoot: empty, env: {}, flags: { port: 'abc' } }))).toMatch(
      /^invalid setting port \(from --port\)/,
    );
    expect(message(() => loadSettings({ defaultRoot: empty, env: { HANGAR_COLOUR: 'red' } }))).toBe(
      'invalid setting colour (from HANGAR_COLOUR): unknown setting',
    );
    const badJson = await makeWorkspace({ 'hangar.config.json': '{ nope' });
    expect(message(() => loadSettings({ defaultRoot: badJson, env: {} }))).toMatch(/is not valid JSON/);
    for (const m of [message(() => loadSettings({ defaultRoot: root, env: {} }))]) expect(m).not.toContain('\n');
  });

  it('keeps ${ENV} secrets as references and redacts literal ones', async () => {
    const root = await makeWorkspace({
      'hangar.config.json': JSON.stringify({ auth: { tokens: { me: '${MY_TOKEN}', ci: 'literal-secret' } } }),
    });
    const s = loadSettings({ defaultRoot: root, env: {} });
    expect(redactSettings(s).auth).toEqual({ tokens: { me: '${MY_TOKEN}', ci: '***' } });
    expect(resolveSecret('${MY_TOKEN}', { MY_TOKEN: 'abc' })).toBe('abc');
    expect(() => resolveSecret('${MY_TOKEN}', {})).toThrow('environment variable MY_TOKEN is not set');
  });
});
