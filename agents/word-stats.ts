import { defineAgent } from 'hangar';

/**
 * Text statistics without a model: word, sentence and character counts, the most frequent
 * words (stop words excluded) and a Flesch reading-ease score.
 */
const STOP_WORDS = new Set(
  'a an and are as at be but by for from has have i if in into is it its of on or our so that the their them then there these this to was we were will with you your'.split(
    ' ',
  ),
);

function syllables(word: string): number {
  const w = word.toLowerCase().replace(/[^a-z]/g, '');
  if (w.length <= 3) return w ? 1 : 0;
  const groups = w
    .replace(/(?:[^laeiouy]es|ed|[^laeiouy]e)$/, '')
    .replace(/^y/, '')
    .match(/[aeiouy]{1,2}/g);
  return Math.max(1, groups?.length ?? 1);
}

export function textStats(text: string) {
  const words = text.match(/[A-Za-z0-9'’-]+/g) ?? [];
  const sentences = Math.max(1, (text.match(/[.!?]+(\s|$)/g) ?? []).length);
  const counts = new Map<string, number>();
  for (const word of words) {
    const key = word.toLowerCase();
    if (!STOP_WORDS.has(key)) counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const top = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5);
  const syllableCount = words.reduce((n, w) => n + syllables(w), 0);
  const readingEase = words.length
    ? Math.round((206.835 - 1.015 * (words.length / sentences) - 84.6 * (syllableCount / words.length)) * 10) / 10
    : 0;
  return {
    words: words.length,
    sentences: words.length ? sentences : 0,
    characters: text.length,
    top_words: top,
    reading_ease: readingEase,
  };
}

export default defineAgent({
  name: 'word-stats',
  description: 'Counts words and sentences, finds the most frequent words and scores readability.',
  version: '1.0.0',
  run: async (input, ctx) => {
    ctx.step('tokenize');
    const stats = textStats(input.query);
    ctx.step('score');
    const top = stats.top_words.map(([w, n]) => `${w} (${n})`).join(', ');
    return {
      response: `${stats.words} words in ${stats.sentences} sentence(s); reading ease ${stats.reading_ease}${top ? `; most frequent: ${top}` : ''}.`,
      output: stats,
    };
  },
});
