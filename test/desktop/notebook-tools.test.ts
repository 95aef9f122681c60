import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { TOOLS } from '../../desktop/views/notebook/tools-panel.js';

/** The tools panel's catalogue is copied from the intel routes (to keep server code out of the bundle): they must agree. */
describe('notebook tools catalogue', () => {
  it('names the 13 tools by the routes the server has', async () => {
    const source = await readFile(new URL('../../core/notebook/intel/routes.ts', import.meta.url), 'utf8');
    const served = new Set([...source.matchAll(/method: '(GET|POST)',\s+url: '([^']*\/tools\/[^']*)'/g)].map((m) => `${m[1]} ${m[2]}`));
    const listed = TOOLS.map((t) => `${t.method} ${t.path.replace('{nb}', ':nb').replace('{variable}', ':variable')}`);
    expect(TOOLS.map((t) => t.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(new Set(listed).size).toBe(13);
    for (const route of listed) expect(served, route).toContain(route);
    // The one tool route not listed is the snippet insert: an action on a snippet, not a tool of its own.
    expect([...served].filter((r) => !listed.includes(r))).toEqual(['POST /api/tools/snippets/:snippet_id/insert']);
  });

  it('opens only GET tools', () => {
    for (const tool of TOOLS.filter((t) => t.opens)) expect(tool.method).toBe('GET');
  });
});
