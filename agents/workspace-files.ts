import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { defineAgent, defineTool, z } from 'hangar';

/**
 * A tool-using agent in one `defineAgent` call: the model answers questions about the workspace by
 * listing folders and reading files through two typed tools. Both are confined to the workspace
 * and never show dot-files or dot-folders (`.env`, `.hangar/`, `.git/`), where secrets live.
 */

/** The absolute path of `relative` inside the workspace; throws (the model is told) for anything outside or hidden. */
function inside(workspace: string, relative: string): string {
  const target = path.resolve(workspace, relative);
  const rel = path.relative(workspace, target);
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`'${relative}' is outside the workspace`);
  if (rel.split(path.sep).some((part) => part.startsWith('.'))) throw new Error(`'${relative}' is hidden (a dot-file or dot-folder)`);
  return target;
}

const listFiles = defineTool({
  name: 'list_files',
  description: 'List the files and folders of a workspace folder (relative path; "." is the workspace root).',
  input: z.object({ folder: z.string().default('.').describe('a folder relative to the workspace root') }),
  output: z.array(z.object({ name: z.string(), kind: z.enum(['file', 'folder']) })),
  run: async ({ folder }, ctx) => {
    const entries = await readdir(inside(ctx.workspace, folder), { withFileTypes: true });
    return entries
      .filter((e) => !e.name.startsWith('.') && e.name !== 'node_modules')
      .map((e) => ({ name: e.name, kind: e.isDirectory() ? ('folder' as const) : ('file' as const) }))
      .sort((a, b) => a.name.localeCompare(b.name));
  },
});

const MAX_CHARS = 20_000;

const readWorkspaceFile = defineTool({
  name: 'read_file',
  description: `Read a text file of the workspace (relative path); at most the first ${MAX_CHARS} characters.`,
  input: z.object({ file: z.string().describe('a file relative to the workspace root') }),
  timeout_ms: 5_000,
  run: async ({ file }, ctx) => {
    const target = inside(ctx.workspace, file);
    if (!(await stat(target)).isFile()) throw new Error(`'${file}' is not a file`);
    const text = await readFile(target, 'utf8');
    return text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS)}\n… (cut at ${MAX_CHARS} characters)` : text;
  },
});

export default defineAgent({
  description: 'Answers questions about the files of this workspace, reading them with tools (needs a model that calls tools).',
  version: '1.0.0',
  instructions:
    'You answer questions about the files of a software workspace. Use list_files to find files and read_file to read them; ' +
    'cite the paths you read. If a tool reports an error, correct the path and try again.',
  tools: [listFiles, readWorkspaceFile],
});
