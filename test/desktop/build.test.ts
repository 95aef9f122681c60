import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildShell, buildViews } from '../../desktop/build.js';

describe('desktop build', () => {
  it('bundles the shell: an ES module main and a CommonJS preload that only requires electron', async () => {
    const out = await mkdtemp(path.join(os.tmpdir(), 'hangar-shell-'));
    try {
      const { main, preload } = await buildShell(undefined, out);
      const preloadCode = await readFile(preload, 'utf8');
      // A sandboxed preload can require nothing but 'electron'.
      const required = [...preloadCode.matchAll(/require\(["']([^"']+)["']\)/g)].map((m) => m[1]);
      expect(new Set(required)).toEqual(new Set(['electron']));
      expect(preloadCode).toContain('exposeInMainWorld');
      const mainCode = await readFile(main, 'utf8');
      expect(mainCode).toMatch(/^import /m);
      expect(mainCode).toContain('startShell');
      expect(mainCode).toContain('HANGAR_DESKTOP_TOKEN');
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it('bundles the views into a page, a script and a style sheet (with maps), loading nothing from elsewhere', async () => {
    const assets = await buildViews();
    expect([...assets.keys()].sort()).toEqual(['app.css', 'app.css.map', 'app.js', 'app.js.map', 'index.html', 'output-frame.html']);
    const js = assets.get('app.js')!.body.toString();
    expect(js).toMatch(/\/\/# sourceMappingURL=app\.js\.map\s*$/);
    // Minified, with the map kept out of the script.
    expect(js.length).toBeLessThan(assets.get('app.js.map')!.body.length);
    expect(js).not.toMatch(/\bimport\s*\(|from\s*["']https?:/);
    expect(assets.get('index.html')!.body.toString()).toContain('content="{{STYLE_NONCE}}"');
  });
});
