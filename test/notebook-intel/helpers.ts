import { expect } from 'vitest';
import type { TestServer } from '../support/server.js';

/** Create a notebook through the API with these cells, run them all and check each succeeded. */
export async function notebookWith(server: TestServer, name: string, sources: string[]): Promise<string> {
  const created = await server.request('/api/notebooks', { method: 'POST', json: { name, cells: sources.map((source) => ({ source })) } });
  expect(created.status, created.text).toBe(201);
  const id = `${name}.nb.ts`;
  const ran = await server.request(`/api/notebooks/${encodeURIComponent(id)}/run`, { method: 'POST' });
  expect(ran.status, ran.text).toBe(200);
  for (const cell of ran.body.cells) expect(cell.state, JSON.stringify(cell.outputs)).toBe('success');
  return id;
}

/** Append a cell, run it, and return it (state and outputs) after the run. */
export async function runCell(
  server: TestServer,
  notebook: string,
  source: string,
): Promise<{ id: string; state: string; outputs: any[] }> {
  const nb = `/api/notebooks/${encodeURIComponent(notebook)}`;
  const added = await server.request(`${nb}/cells`, { method: 'POST', json: { source } });
  expect(added.status, added.text).toBe(201);
  const ran = await server.request(`${nb}/cells/${added.body.id}/run`, { method: 'POST' });
  expect(ran.status, ran.text).toBe(200);
  return ran.body.cells.find((c: { id: string }) => c.id === added.body.id);
}

/** A cell value printed by the kernel, as text (execute_result text/plain). */
export function resultText(cell: { outputs: any[] }): string {
  const out = cell.outputs.find((o) => o.output_type === 'execute_result');
  return out ? String(out.data['text/plain'] ?? JSON.stringify(out.data)) : '';
}

/**
 * A deterministic messy data set with one instance of every issue smart preprocessing looks for
 * (seeded generator, so the numbers in the assertions are stable).
 */
export const MESSY_CELL = `
const messy = (() => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const normal = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
  const cities = ['Oslo', 'Bergen', 'Trondheim', 'Stavanger', 'Tromso'];
  const rows = [];
  for (let i = 0; i < 200; i++) {
    const churned = i % 10 === 0 ? 'yes' : 'no';
    rows.push({
      id: 'row-' + i,
      age: i % 10 === 3 ? null : i === 5 ? 400 : Math.round(40 + 10 * normal()),
      income: Math.round(Math.exp(10 + normal())),
      city: cities[i % 5],
      price_text: (1000 + i * 13.5).toLocaleString('en-US'),
      signup: '2024-' + String(1 + (i % 12)).padStart(2, '0') + '-' + String(1 + (i % 28)).padStart(2, '0'),
      country: i < 197 ? 'NO' : 'SE',
      source: 'web',
      score: i % 20 === 7 ? 'n/a' : i % 7,
      refund_issued: churned === 'yes' ? 'Y' : 'N',
      churned,
    });
  }
  for (let i = 0; i < 5; i++) rows.push({ ...rows[i] });
  return rows;
})();
`;
