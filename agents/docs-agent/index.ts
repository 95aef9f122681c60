import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { type Citation, defineAgent, type RunContext } from 'hangar';
import { Bm25Index, type Hit, type Passage, splitMarkdown, tokenize } from './bm25';

/**
 * Answers questions from local Markdown with BM25 retrieval, citing the sections it used and
 * suggesting related ones. Useful with no model configured (the answer is extracted from the best
 * sections); with a model it writes the answer from the same retrieved sections.
 *
 * Sources: the workspace's `docs` collection when an ingestor has filled it (ingestors/docs-folder.ts:
 * `POST /api/v1/ingestion/docs-folder/run`), else the Markdown files of `agents/docs-agent/docs/`
 * (shipped) and the workspace's own `docs/` folder read directly, so it works on a fresh install.
 * Either index is rebuilt only when its sources change.
 */

const MAX_SECTIONS = 3;
const DOCS_COLLECTION = 'docs';

function markdownFiles(dir: string, base = dir): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name.startsWith('.') || entry.name === 'node_modules' ? [] : markdownFiles(full, base);
    return /\.md$/i.test(entry.name) ? [full] : [];
  });
}

let cached: { signature: string; index: Bm25Index } | undefined;

let ingested: { signature: string; index: Bm25Index } | undefined;

/** The index over the ingested `docs` collection, or undefined when nothing was ingested. */
async function collectionIndex(ctx: RunContext): Promise<Bm25Index | undefined> {
  const documents = await ctx.documents(DOCS_COLLECTION);
  if (documents.length === 0) return undefined;
  const signature = documents.map((d) => `${d.id}\u0000${d.content}`).join('\u0001');
  if (ingested?.signature !== signature) {
    const passages: Passage[] = documents.map((d) => ({ source: d.resource, title: d.title ?? d.resource, content: d.content }));
    ingested = { signature, index: new Bm25Index(passages) };
  }
  return ingested.index;
}

function indexFor(workspace: string): Bm25Index {
  const roots = [path.join(workspace, 'agents', 'docs-agent', 'docs'), path.join(workspace, 'docs')];
  const files = roots.flatMap((root) => markdownFiles(root).map((file) => ({ root, file })));
  const signature = files.map(({ file }) => `${file}:${statSync(file).mtimeMs}`).join('|');
  if (cached?.signature === signature) return cached.index;
  const passages: Passage[] = files.flatMap(({ root, file }) =>
    splitMarkdown(path.relative(path.dirname(root), file).split(path.sep).join('/'), readFileSync(file, 'utf8')),
  );
  cached = { signature, index: new Bm25Index(passages) };
  return cached.index;
}

/** The sentences of a section that share the most terms with the question, in their order. */
function bestSentences(hit: Hit, query: string, count: number): string {
  const wanted = new Set(tokenize(query));
  const sentences = hit.content
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+/)
    .map((text, i) => ({ text, i, score: tokenize(text).filter((t) => wanted.has(t)).length }));
  return sentences
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, count)
    .sort((a, b) => a.i - b.i)
    .map((s) => s.text)
    .join(' ');
}

export default defineAgent({
  description: 'Answers questions about Hangar from local Markdown documentation, with citations (BM25 retrieval; works offline).',
  version: '1.0.0',
  prompts: {
    versions: {
      v1: 'Answer the question using only the numbered documentation sections. Cite sections as [n]. If they do not answer it, say so.',
    },
  },
  run: async (input, ctx) => {
    ctx.step('retrieve');
    const fromCollection = await collectionIndex(ctx);
    const index = fromCollection ?? indexFor(ctx.workspace);
    const ranked = index.search(input.query, MAX_SECTIONS + 3);
    ctx.tool('bm25_search', {
      query: input.query,
      k: MAX_SECTIONS,
      sections_indexed: index.size,
      source: fromCollection ? `collection:${DOCS_COLLECTION}` : 'files',
    });
    const hits = ranked.slice(0, MAX_SECTIONS);
    const citations: Citation[] = hits.map((h) => ({
      source: h.source,
      title: h.title,
      snippet: bestSentences(h, input.query, 1),
      score: h.score,
    }));
    const suggestions = ranked.slice(MAX_SECTIONS).map((h) => `Tell me about "${h.title}"`);

    if (hits.length === 0) {
      return {
        response: `I could not find anything about "${input.query}" in the documentation (${index.size} sections searched).`,
        suggestions: ['How do I write an agent?', 'How do threads and chat work?', 'How do I configure a model?'],
        citations: [],
        context: [],
        reasoning: 'No section shares a term with the question.',
      };
    }

    ctx.step('compose');
    let response: string;
    let answeredBy = 'extractive';
    if (ctx.model.configured) {
      const sources = hits.map((h, i) => `[${i + 1}] ${h.title} (${h.source})\n${h.content}`).join('\n\n');
      try {
        response = await ctx.model.chat([
          { role: 'system', content: ctx.prompt },
          { role: 'user', content: `${sources}\n\nQuestion: ${input.query}` },
        ]);
        answeredBy = 'model';
      } catch {
        // The sections are still the answer; a model outage must not take the docs offline.
        response = hits.map((h, i) => `${bestSentences(h, input.query, 2)} [${i + 1}]`).join('\n\n');
      }
    } else {
      response = hits.map((h, i) => `${bestSentences(h, input.query, 2)} [${i + 1}]`).join('\n\n');
    }
    return {
      response,
      citations,
      suggestions,
      context: hits.map((h) => ({ content: h.content, source: h.source, title: h.title, score: h.score })),
      metadata: {
        answered_by: answeredBy,
        sections_indexed: index.size,
        source: fromCollection ? `collection:${DOCS_COLLECTION}` : 'files',
      },
      reasoning: `BM25 ranked ${ranked.length} matching sections; answered from the top ${hits.length}: ${hits.map((h) => h.title).join(', ')}.`,
    };
  },
});
