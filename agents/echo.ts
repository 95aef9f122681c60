import { defineAgent } from 'hangar';

/**
 * The smallest useful agent: repeats the query back, with the words reversed when
 * `context.reverse` is true. Handy to check a fresh install end to end.
 */
export default defineAgent({
  description: 'Echoes the query back (optionally reversed word by word).',
  version: '1.0.0',
  prompts: { versions: { v1: 'Repeat the user input.', v2: 'Repeat the user input, politely.' }, active: 'v1' },
  run: async (input, ctx) => {
    ctx.step('echo');
    const words = input.query.trim().split(/\s+/).filter(Boolean);
    const text = input.context.reverse === true ? words.reverse().join(' ') : words.join(' ');
    const polite = input.prompt_version === 'v2';
    return {
      response: polite ? `You said: ${text}` : text,
      output: { words: words.length },
      suggestions: words.length ? [`Reverse "${text}"`] : [],
    };
  },
});
