/**
 * The `pipeline` drop-in kind: discovery loads `pipelines/<name>.json` (or a module whose default
 * export is a definition) like every other drop-in, so a broken file is reported where the others
 * are — `/api/v1/status` errors, the sidebar, the registry's change events — and hot-reloaded when
 * it changes. The pipelines service reads definitions from the registry.
 *
 * Only the shape is checked here. Whether the endpoints, agents, plugins and notebook cells a
 * pipeline calls exist is checked when it is listed, inspected or run: those resources load in the
 * same discovery pass (or are registered by code later), so at load time "unknown agent" could be a
 * matter of file order.
 */
import type { DropInKind } from '../kernel/registry.js';
import { describeProblems, parseDefinition } from './graph.js';
import type { PipelineDefinition } from './schemas.js';

/** Names that are routes under /api/v1/pipelines, so no pipeline may take them. */
export const RESERVED_PIPELINE_NAMES = new Set(['validate']);

export const PIPELINE_KIND = 'pipeline';

/**
 * Parse a definition found in `pipelines/<fileName>.json`. Its `name` defaults to the file name and
 * must equal it when given: every route finds a pipeline's file by its name.
 */
export function loadPipelineFile(exported: unknown, fileName: string): PipelineDefinition {
  const raw = exported && typeof exported === 'object' && !Array.isArray(exported) ? { name: fileName, ...(exported as object) } : exported;
  const parsed = parseDefinition(raw);
  if (!parsed.definition) throw new Error(describeProblems(parsed.errors));
  const { name } = parsed.definition;
  if (name !== fileName) throw new Error(`name '${name}' does not match the file name '${fileName}'; rename one of them`);
  if (RESERVED_PIPELINE_NAMES.has(name)) throw new Error(`name '${name}' is reserved by a pipelines route`);
  return parsed.definition;
}

export const pipelineKind: DropInKind<PipelineDefinition> = {
  kind: PIPELINE_KIND,
  folder: 'pipelines',
  json: true,
  load: loadPipelineFile,
  nameOf: (definition) => definition.name,
};
