/**
 * Okapi BM25 over Markdown sections — the docs agent's retrieval. Pure and dependency-free so it
 * runs with nothing configured. Parameters are the usual k1 = 1.2, b = 0.75; idf is the
 * non-negative variant ln(1 + (N − df + 0.5) / (df + 0.5)), so a term present in every section
 * scores a little instead of going negative.
 */

export interface Passage {
  /** File path relative to the docs folder it came from. */
  source: string;
  /** The nearest heading above the passage (the file name when there is none). */
  title: string;
  content: string;
}

export interface Hit extends Passage {
  score: number;
}

const STOP = new Set(
  'a an and are as at be but by can do does for from has have how i if in into is it its me my no not of on or so that the their then there these this to was we what when where which who why will with you your'.split(
    ' ',
  ),
);

/** Lowercase words without stop words, with a light plural/verb suffix strip ("agents" → "agent"). */
export function tokenize(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.filter((w) => w.length > 1 && !STOP.has(w)).map(stem);
}

function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return word.slice(0, -3) + 'y';
  if (word.length > 4 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 3 && word.endsWith('es') && /(ss|x|ch|sh)es$/.test(word)) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** Split Markdown into one passage per heading section (headings kept as the passage title). */
export function splitMarkdown(source: string, markdown: string): Passage[] {
  const fallback = source.replace(/\.md$/i, '');
  const passages: Passage[] = [];
  let title = fallback;
  let lines: string[] = [];
  const flush = () => {
    const content = lines.join('\n').trim();
    if (content) passages.push({ source, title, content });
    lines = [];
  };
  let fenced = false;
  for (const line of markdown.split(/\r?\n/)) {
    if (/^```/.test(line)) fenced = !fenced;
    const heading = !fenced && /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      title = heading[2]!.trim();
      continue;
    }
    lines.push(line);
  }
  flush();
  return passages;
}

export class Bm25Index {
  private readonly docs: Array<{ passage: Passage; tf: Map<string, number>; length: number }>;
  private readonly df = new Map<string, number>();
  private readonly avgLength: number;

  constructor(
    passages: Passage[],
    private readonly k1 = 1.2,
    private readonly b = 0.75,
  ) {
    this.docs = passages.map((passage) => {
      // The title counts twice: a section called "Threads" is about threads.
      const terms = [...tokenize(passage.title), ...tokenize(passage.title), ...tokenize(passage.content)];
      const tf = new Map<string, number>();
      for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const t of tf.keys()) this.df.set(t, (this.df.get(t) ?? 0) + 1);
      return { passage, tf, length: terms.length };
    });
    this.avgLength = this.docs.reduce((n, d) => n + d.length, 0) / (this.docs.length || 1);
  }

  get size(): number {
    return this.docs.length;
  }

  search(query: string, k = 3): Hit[] {
    const terms = [...new Set(tokenize(query))];
    const n = this.docs.length;
    const hits: Hit[] = [];
    for (const doc of this.docs) {
      let score = 0;
      for (const term of terms) {
        const f = doc.tf.get(term);
        if (!f) continue;
        const df = this.df.get(term)!;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        score += (idf * f * (this.k1 + 1)) / (f + this.k1 * (1 - this.b + (this.b * doc.length) / this.avgLength));
      }
      if (score > 0) hits.push({ ...doc.passage, score: Math.round(score * 1000) / 1000 });
    }
    return hits.sort((a, b) => b.score - a.score || a.source.localeCompare(b.source)).slice(0, k);
  }
}
