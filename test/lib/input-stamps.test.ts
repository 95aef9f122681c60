import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { inputsUnchanged, stampInputs } from '../../core/lib/input-stamps.js';

describe('input stamps: is a build still current?', () => {
  it('says unchanged until a file is rewritten, touched or removed', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'stamps-'));
    const a = path.join(dir, 'a.ts');
    const b = path.join(dir, 'b.ts');
    await writeFile(a, 'export const a = 1;\n');
    await writeFile(b, 'export const b = 2;\n');
    const stamps = stampInputs([a, b]);
    expect(inputsUnchanged(stamps)).toBe(true);

    // Same size, new content: the modification time tells.
    await writeFile(a, 'export const a = 3;\n');
    const later = new Date(Date.now() + 5_000);
    await utimes(a, later, later);
    expect(inputsUnchanged(stamps)).toBe(false);

    const again = stampInputs([a, b]);
    await writeFile(b, 'export const b = 22;\n');
    expect(inputsUnchanged(again)).toBe(false);

    const third = stampInputs([a, b]);
    await rm(b);
    expect(inputsUnchanged(third)).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });
});
