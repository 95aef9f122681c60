/**
 * Run an analysis function of the intel worker bundle inside the kernel of the notebook that holds
 * a variable. The spec's routes name only the variable (`/api/smartprep/{var_name}`), since a
 * notebook server has one kernel; Hangar may have several notebooks open, so `notebook` is an
 * optional query parameter and, without it, the one running notebook that defines the name is used.
 */
import { fail } from '../../kernel/errors.js';
import { workerBundle } from '../../lib/worker-bundle.js';
import type { NotebookService } from '../service.js';
import type { NotebookSession } from '../session.js';
import type { WorkerAnswer } from './worker/entry.js';

export type IntelFunction = 'smartprepCall' | 'algorithmMatchCall' | 'validateCall' | 'presentCall';

async function runningSessions(
  service: NotebookService,
  notebook: string | undefined,
): Promise<Array<{ id: string; session: NotebookSession }>> {
  if (notebook) return [{ id: notebook, session: await service.open(notebook) }];
  const open = (await service.list()).filter((n) => n.open);
  const sessions = await Promise.all(open.map(async (n) => ({ id: n.id, session: await service.open(n.id) })));
  return sessions.filter((s) => s.session.kernel.running);
}

/**
 * Call `fn` on the kernel value `name`. 404 names the variable when no running notebook defines it,
 * 409 when several do and `notebook` was not given; the function's own 404/422 pass through.
 */
export async function callOnVariable<T>(
  service: NotebookService,
  input: { notebook?: string; name: string; fn: IntelFunction; args: unknown },
): Promise<T> {
  // ES module: imported by the kernel thread with import(); ml-kmeans ships only as an ES module.
  const module = workerBundle('core/notebook/intel/worker/entry.ts', { format: 'esm' });
  const sessions = await runningSessions(service, input.notebook);
  // A cheap presence check first, so the analysis runs once, in the one kernel that has the value.
  const holders: Array<{ id: string; session: NotebookSession }> = [];
  const known = new Set<string>();
  for (const entry of sessions) {
    if (!entry.session.kernel.running) continue;
    const result = await entry.session.kernel.call({ module, fn: 'presentCall', name: input.name });
    if ('missing' in result) result.names.forEach((n) => known.add(n));
    else holders.push(entry);
  }
  if (holders.length === 0) {
    const where = input.notebook ? `in notebook ${input.notebook}` : 'in any running notebook';
    const hint = known.size
      ? `; defined variables: ${[...known].sort().join(', ')}`
      : input.notebook
        ? '; run the cell that defines it first'
        : '; open a notebook and run the cell that defines it first';
    throw fail('HANGAR_NOTEBOOK_INTEL_VARIABLE_NOT_FOUND', { variable: input.name, where: `${where}${hint}` });
  }
  if (holders.length > 1) {
    throw fail('HANGAR_NOTEBOOK_INTEL_VARIABLE_AMBIGUOUS', { variable: input.name, notebooks: holders.map((h) => h.id).join(', ') });
  }
  const result = await holders[0].session.kernel.call({ module, fn: input.fn, name: input.name, args: input.args });
  // Deleted between the two calls (a cell re-ran meanwhile): same answer as never defined.
  if ('missing' in result)
    throw fail('HANGAR_NOTEBOOK_INTEL_VARIABLE_NOT_FOUND', { variable: input.name, where: `in notebook ${holders[0].id}` });
  const answer = result.value as WorkerAnswer<T>;
  if ('error' in answer) {
    throw fail(answer.error.status === 404 ? 'HANGAR_NOTEBOOK_INTEL_ANALYSIS_NOT_FOUND' : 'HANGAR_NOTEBOOK_INTEL_DATA_UNSUITABLE', {
      problem: answer.error.message,
    });
  }
  return answer.ok;
}
