import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SUPPORTED_RANGE, unsupportedNodeMessage } from '../../bin/node-version.cjs';

const repo = path.resolve(import.meta.dirname, '..', '..');

describe('supported Node.js lines', () => {
  it('reads the range from package.json engines, the one place it is written', () => {
    const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(SUPPORTED_RANGE).toBe(pkg.engines.node);
  });

  it('refuses end-of-life and too-old releases with one line naming the version and what to install', () => {
    for (const version of ['20.20.2', '18.20.8', '22.12.0', '22.16.0']) {
      const message = unsupportedNodeMessage(version);
      expect(message, version).toBe(
        `hangar: Node ${version} is not supported; install Node 22.17 or newer ` +
          `(Hangar needs node ${SUPPORTED_RANGE}; Node 22 and 24 are the supported LTS lines, see README "Supported Node.js versions")`,
      );
      expect(message).not.toContain('\n');
    }
  });

  it('accepts the supported lines and the newest one', () => {
    for (const version of ['22.17.0', '22.23.3', '24.0.0', '24.21.0', '26.10.0'])
      expect(unsupportedNodeMessage(version), version).toBeUndefined();
  });

  it('names a whole major when the range starts at one', () => {
    expect(unsupportedNodeMessage('22.23.3', '>=24')).toMatch(/^hangar: Node 22\.23\.3 is not supported; install Node 24 or newer /);
  });

  // The real thing, where the machine still has its end-of-life Node 20 (these machines do).
  const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find((bin) => {
    if (!existsSync(bin)) return false;
    const version = spawnSync(bin, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    return version !== '' && unsupportedNodeMessage(version) !== undefined;
  });
  it.skipIf(!oldNode)('`hangar` on an unsupported Node exits 1 with that one line, before building or loading anything', () => {
    const run = spawnSync(oldNode!, [path.join(repo, 'bin', 'hangar.mjs'), '--version'], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^hangar: Node \d+\.\d+\.\d+ is not supported; install Node 22\.17 or newer \(.*\)\n$/);
  });
});
