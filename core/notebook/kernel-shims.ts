/**
 * What notebooks written for other TypeScript kernels expect to find, so they run here unchanged:
 *
 * - **Deno's Jupyter kernel**: a `Deno` global with `Deno.jupyter` (`display`, `html`, `md`, `svg`,
 *   `image`, `format`, `broadcast`, `$display`) as Deno documents it, plus the few file and
 *   environment calls notebooks use most (`readTextFile`, `writeTextFile`, `readFile`, `env.get`,
 *   `cwd`). Anything else of `Deno.*` throws an error naming the call, rather than "undefined is
 *   not a function".
 * - **tslab**: `import * as tslab from 'tslab'` gives `tslab.display` (`html`, `markdown`, `svg`,
 *   `png`, `jpeg`, `gif`, `pdf`, `text`, `javascript`, `latex`, `raw`). The real package only works
 *   inside tslab's own kernel, so the shim is used even when it is installed.
 *
 * Both only produce nbformat MIME bundles, which the kernel emits as `display_data` like our own
 * `display()`.
 */
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { JUPYTER_DISPLAY, jupyterBundle, type MimeBundle, renderValue } from './render.js';

type Emit = (bundle: MimeBundle) => void;

/** `html\`<b>${x}</b>\`` or `html('<b>x</b>')`, as Deno's tagged helpers accept both. */
function text(strings: TemplateStringsArray | string, values: unknown[]): string {
  if (typeof strings === 'string') return strings;
  return strings.reduce((out, part, i) => out + part + (i < values.length ? String(values[i]) : ''), '');
}

const displayable = (bundle: MimeBundle) => ({ [JUPYTER_DISPLAY]: () => bundle });

const JPEG = [0xff, 0xd8, 0xff];
const PNG = [0x89, 0x50, 0x4e, 0x47];
const GIF = [0x47, 0x49, 0x46];

function imageBundle(bytes: Uint8Array): MimeBundle {
  const starts = (signature: number[]) => signature.every((b, i) => bytes[i] === b);
  const mime = starts(PNG) ? 'image/png' : starts(JPEG) ? 'image/jpeg' : starts(GIF) ? 'image/gif' : undefined;
  if (!mime) throw new TypeError('Deno.jupyter.image: only PNG, JPEG and GIF images can be shown');
  return { [mime]: Buffer.from(bytes).toString('base64') };
}

/** Whatever a value shows as: its own Jupyter bundle, else what our `display()` would show. */
const format = (value: unknown): MimeBundle => jupyterBundle(value) ?? renderValue(value) ?? {};

/** The `Deno` global, `baseDir` being the notebook's folder (relative paths resolve there). */
export function denoShim(emit: Emit, baseDir: () => string): Record<string, unknown> {
  const path = (p: string | URL) => (p instanceof URL ? p : resolve(baseDir(), p));
  const jupyter = {
    $display: JUPYTER_DISPLAY,
    display(value: unknown, options: { raw?: boolean } = {}) {
      emit(options.raw ? (value as MimeBundle) : format(value));
    },
    html: (strings: TemplateStringsArray | string, ...values: unknown[]) => displayable({ 'text/html': text(strings, values) }),
    md: (strings: TemplateStringsArray | string, ...values: unknown[]) => displayable({ 'text/markdown': text(strings, values) }),
    svg: (strings: TemplateStringsArray | string, ...values: unknown[]) => displayable({ 'image/svg+xml': text(strings, values) }),
    image(source: string | Uint8Array) {
      if (typeof source !== 'string') return displayable(imageBundle(source));
      // Deno reads the file synchronously; a thenable would not display, so read it now.
      return displayable(imageBundle(readFileSync(path(source))));
    },
    format,
    /** Comm messages need a front end that listens; none does here. */
    async broadcast() {},
  };
  const known = {
    jupyter,
    readTextFile: (p: string | URL) => readFile(path(p), 'utf8'),
    writeTextFile: (p: string | URL, data: string) => writeFile(path(p), data),
    readFile: async (p: string | URL) => new Uint8Array(await readFile(path(p))),
    env: { get: (name: string) => process.env[name], toObject: () => ({ ...process.env }) },
    cwd: () => baseDir(),
    args: [] as string[],
    build: { os: process.platform, arch: process.arch },
  };
  return new Proxy(known, {
    get(target, name) {
      if (typeof name === 'symbol' || name in target) return target[name as keyof typeof target];
      throw new TypeError(
        `Deno.${name} is not available: this notebook runs on Node.js in Hangar, which provides Deno.jupyter and a few file calls ` +
          '(readTextFile, writeTextFile, readFile, env.get, cwd). Use the node: module for it instead (e.g. node:fs)',
      );
    },
  });
}

/** The `tslab` module (`tslab.display.*`). */
export function tslabShim(emit: Emit): Record<string, unknown> {
  const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  const display = {
    html: (s: string) => emit({ 'text/html': s }),
    markdown: (s: string) => emit({ 'text/markdown': s }),
    svg: (s: string) => emit({ 'image/svg+xml': s }),
    png: (bytes: Uint8Array) => emit({ 'image/png': base64(bytes) }),
    jpeg: (bytes: Uint8Array) => emit({ 'image/jpeg': base64(bytes) }),
    gif: (bytes: Uint8Array) => emit({ 'image/gif': base64(bytes) }),
    pdf: (bytes: Uint8Array) => emit({ 'application/pdf': base64(bytes) }),
    text: (s: string) => emit({ 'text/plain': s }),
    javascript: (s: string) => emit({ 'application/javascript': s }),
    latex: (s: string) => emit({ 'text/latex': s }),
    raw: (contentType: string, content: string | Uint8Array) =>
      emit({ [contentType]: typeof content === 'string' ? content : base64(content) }),
  };
  return { display, default: { display }, versions: { tslab: 'hangar-shim' } };
}
