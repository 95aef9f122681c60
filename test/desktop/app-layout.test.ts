import { describe, expect, it } from 'vitest';
import { LAYOUTS as SERVER_LAYOUTS } from '../../core/notebook/export.js';
import { type AppCell, arrangeApp, LAYOUTS } from '../../desktop/views/notebook/app-layout.js';

const md = (id: string, source: string): AppCell => ({ id, cell_type: 'markdown', name: '', source, outputs: [] });
const code = (id: string, outputs: unknown[] = [{}], name = ''): AppCell => ({ id, cell_type: 'code', name, source: 'x', outputs });

describe('notebook app preview layouts', () => {
  it('offers the same five layouts as `hangar notebook app`', () => {
    expect([...LAYOUTS]).toEqual([...SERVER_LAYOUTS]);
  });

  it('hides code cells that produced nothing', () => {
    const { main } = arrangeApp([md('a', '# Title'), code('b', []), code('c')], 'linear');
    expect(main.map((c) => c.id)).toEqual(['a', 'c']);
  });

  it('puts the leading markdown cells in the sidebar', () => {
    const { sidebar, main } = arrangeApp([md('a', '# Title'), md('b', 'About'), code('c'), md('d', 'Notes')], 'sidebar');
    expect(sidebar.map((c) => c.id)).toEqual(['a', 'b']);
    expect(main.map((c) => c.id)).toEqual(['c', 'd']);
    // With no leading prose the first cell still gets the sidebar, so the main area is not alone.
    expect(arrangeApp([code('x'), code('y')], 'sidebar').sidebar.map((c) => c.id)).toEqual(['x']);
  });

  it('titles tabs by name, first heading, or position', () => {
    const { titles } = arrangeApp([md('a', 'intro\n## Overview'), code('b', [{}], 'chart'), code('c')], 'tabs');
    expect(titles).toEqual(['Overview', 'chart', 'Cell 3']);
  });
});
