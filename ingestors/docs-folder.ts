import { existsSync, statSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { defineIngestor, type IngestDocument, z } from 'hangar';

/**
 * Folder ingestor: Markdown, text and CSV files of workspace folders into the `docs` collection —
 * the collection the documentation agent searches. By default it reads the folders that agent
 * reads, `docs/` and `agents/docs-agent/docs/`; a missing folder is skipped.
 *
 * Document ids are stable, so re-running updates instead of duplicating:
 * - Markdown: one document per heading section, `<file>#<heading-slug>` (text before the first
 *   heading: `<file>#_preamble`);
 * - text: one document per ~2,000-character run of paragraphs, `<file>#<n>`;
 * - CSV: one document per row, `<file>#row-<n>`, its content `column: value` lines.
 * Resource ids are paths relative to the workspace. Folders must be inside the workspace.
 */

const CHUNK_CHARS = 2_000;

const Options = z.object({
  paths: z.array(z.string().min(1)).min(1).default(['docs', 'agents/docs-agent/docs']),
  extensions: z
    .array(z.enum(['md', 'markdown', 'txt', 'csv']))
    .min(1)
    .default(['md', 'markdown', 'txt', 'csv']),
});
type Options = z.infer<typeof Options>;

function foldersOf(workspace: string, options: Options): string[] {
  return options.paths.map((p) => {
    const dir = path.resolve(workspace, p);
    const rel = path.relative(workspace, dir);
    if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`path ${p} is outside the workspace`);
    return dir;
  });
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 60) || 'section';

function markdownSections(file: string, text: string): IngestDocument[] {
  const sections: { title: string; lines: string[] }[] = [{ title: path.basename(file), lines: [] }];
  let fence = false;
  for (const line of text.split(/\r?\n/)) {
    if (/^(```|~~~)/.test(line)) fence = !fence;
    const heading = !fence && /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (heading) sections.push({ title: heading[1]!, lines: [] });
    else sections.at(-1)!.lines.push(line);
  }
  // Ids come from the heading, not the position, so inserting a section leaves the others' ids
  // (and their stored records) alone; a repeated heading gets -2, -3, ….
  const used = new Map<string, number>();
  return sections
    .map((section, i) => {
      const base = i === 0 ? '_preamble' : slug(section.title);
      const n = (used.get(base) ?? 0) + 1;
      used.set(base, n);
      const id = `${file}#${n === 1 ? base : `${base}-${n}`}`;
      return { id, title: section.title, content: section.lines.join('\n').trim(), metadata: { format: 'markdown', section: i } };
    })
    .filter((d) => d.content !== '' || d.metadata.section > 0);
}

function textChunks(file: string, text: string): IngestDocument[] {
  const chunks: string[] = [];
  let current = '';
  for (const paragraph of text.split(/\n\s*\n/)) {
    if (current && current.length + paragraph.length > CHUNK_CHARS) {
      chunks.push(current);
      current = '';
    }
    current = current ? `${current}\n\n${paragraph}` : paragraph;
  }
  if (current.trim()) chunks.push(current);
  return chunks.map((content, i) => ({
    id: `${file}#${i}`,
    title: chunks.length > 1 ? `${path.basename(file)} (${i + 1}/${chunks.length})` : path.basename(file),
    content: content.trim(),
    metadata: { format: 'text', chunk: i },
  }));
}

/** RFC 4180 fields: commas, quotes doubled inside quoted fields, newlines inside quotes. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      field = '';
      if (row.some((f) => f !== '')) rows.push(row);
      row = [];
    } else field += c;
  }
  row.push(field);
  if (row.some((f) => f !== '')) rows.push(row);
  return rows;
}

function csvRows(file: string, text: string): IngestDocument[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  return rows.map((cells, i) => ({
    id: `${file}#row-${i + 1}`,
    title: `${path.basename(file)} row ${i + 1}`,
    content: header.map((h, j) => `${h}: ${cells[j] ?? ''}`).join('\n'),
    metadata: { format: 'csv', row: i + 1, ...Object.fromEntries(header.map((h, j) => [h, cells[j] ?? ''])) },
  }));
}

export default defineIngestor({
  version: '1.0.0',
  description: 'Markdown, text and CSV files of a workspace folder into the docs collection (searched by the documentation agent).',
  collection: 'docs',
  options: Options,
  discover: async ({ workspace, options }) => {
    const wanted = new Set<string>(options.extensions);
    const found = new Set<string>();
    for (const dir of foldersOf(workspace, options)) {
      if (!existsSync(dir)) continue;
      // A folder listed inside another one is read once.
      for (const f of await walk(dir)) if (wanted.has(path.extname(f).slice(1).toLowerCase())) found.add(f);
    }
    const files = [...found].sort();
    return Promise.all(
      files.map(async (file) => {
        const info = await stat(file);
        return {
          id: path.relative(workspace, file).split(path.sep).join('/'),
          uri: file,
          size: info.size,
          modified: info.mtime.toISOString(),
        };
      }),
    );
  },
  read: async (resource) => {
    const text = await readFile(resource.uri!, 'utf8');
    const ext = path.extname(resource.id).slice(1).toLowerCase();
    const docs =
      ext === 'csv' ? csvRows(resource.id, text) : ext === 'txt' ? textChunks(resource.id, text) : markdownSections(resource.id, text);
    // Only what the document itself says goes into its metadata: a file-level hash here would make
    // every section of a file look changed when one section is edited.
    return docs.map((d) => ({ ...d, metadata: { ...d.metadata, source: resource.id } }));
  },
  health: ({ workspace, options }) => {
    const dirs = foldersOf(workspace, options);
    const present = options.paths.filter((_, i) => existsSync(dirs[i]!) && statSync(dirs[i]!).isDirectory());
    if (present.length === 0) return { ok: false, detail: `none of the folders ${options.paths.join(', ')} exists` };
    const missing = options.paths.filter((p) => !present.includes(p));
    return {
      ok: true,
      detail: `reads ${options.extensions.join(', ')} files under ${present.join(', ')}${missing.length ? ` (missing, skipped: ${missing.join(', ')})` : ''}`,
    };
  },
});
