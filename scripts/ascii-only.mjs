/**
 * What esbuild leaves non-ASCII in its ASCII output (regular expression literals such as the test
 * reporters' `/^[#ℹ]/`, legal comments), escaped as `\uXXXX`, so bin/load-cli.mjs can read
 * dist/cli.cjs as a one-byte (Latin-1) string: a 5.8 MB UTF-8 read with three non-ASCII lines made
 * a two-byte string and took ~55 ms of every start, as Latin-1 ~2 ms (first read in a process).
 *
 * A regular expression matches the same text (an astral character becomes its surrogate pair,
 * which under the `u` flag is again one code point); its `source` shows the escape. Strings and
 * identifiers are already escaped by esbuild. Columns after an escape on its line shift by five
 * per character in the source map.
 */
export function escapeNonAscii(text) {
  return text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
