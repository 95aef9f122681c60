/**
 * Import specifiers from other kernels' notebooks, read the way a user of those kernels means them,
 * and errors that say what to do instead of naming our worker's bundle path.
 *
 * - `npm:pkg@1.2/sub` (Deno) is the npm package `pkg` (subpath `sub`), resolved from the notebook
 *   folder's `node_modules` like a bare `pkg/sub`; the version is only used in the install hint
 *   (nothing is downloaded while a cell runs).
 * - `jsr:` and `https:`/`http:` are refused with the reason: the kernel runs offline and does not
 *   fetch code while a cell runs (and a URL's content can change under a notebook).
 * - A package that is not installed says which `npm install` to run, and where.
 * - A Node built-in by its bare name (`fs`, `crypto`: tslab notebooks import them so) is the
 *   built-in, never a package of that name looked up in a folder.
 */
import { isBuiltin } from 'node:module';

export type Specifier =
  | { kind: 'package'; name: string; version?: string; request: string }
  | { kind: 'refused'; message: string }
  | { kind: 'other'; request: string };

/** `@scope/name@1/sub` → name `@scope/name`, version `1`, request `@scope/name/sub`. */
function splitPackage(text: string): { name: string; version?: string; request: string } {
  const parts = text.split('/');
  const head = text.startsWith('@') ? 2 : 1;
  const nameParts = parts.slice(0, head);
  const last = nameParts[head - 1] ?? '';
  const at = last.indexOf('@', 1);
  const version = at > 0 ? last.slice(at + 1) : undefined;
  if (at > 0) nameParts[head - 1] = last.slice(0, at);
  const name = nameParts.join('/');
  const rest = parts.slice(head);
  return { name, ...(version ? { version } : {}), request: [name, ...rest].join('/') };
}

export function classifySpecifier(specifier: string): Specifier {
  if (specifier.startsWith('npm:')) return { kind: 'package', ...splitPackage(specifier.slice(4).replace(/^\/+/, '')) };
  if (specifier.startsWith('jsr:')) {
    const { name } = splitPackage(specifier.slice(4).replace(/^\/+/, ''));
    return {
      kind: 'refused',
      message:
        `cannot import "${specifier}": the notebook kernel runs offline and does not fetch from JSR. ` +
        `Install it into the notebook's folder with \`npx jsr add ${name}\` (JSR's npm compatibility), then import "${name}"`,
    };
  }
  if (/^https?:/.test(specifier)) {
    return {
      kind: 'refused',
      message:
        `cannot import "${specifier}": the notebook kernel does not fetch code from the network (it runs offline, and a URL's ` +
        `content can change under a notebook). Install the package with npm in the notebook's folder and import it by name, ` +
        `or save the module next to the notebook and import it by relative path`,
    };
  }
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:') || specifier.startsWith('file:')) {
    return { kind: 'other', request: specifier };
  }
  if (isBuiltin(specifier)) return { kind: 'other', request: `node:${specifier}` };
  return { kind: 'package', ...splitPackage(specifier) };
}

/** The error for a package found neither in the notebook's folder nor among Hangar's own. */
export function missingPackage(name: string, version: string | undefined, folder: string): Error {
  const install = `npm install ${name}${version ? `@${version}` : ''}`;
  const error = new Error(
    `package "${name}" is not installed for this notebook: run \`${install}\` in ${folder} (the notebook's folder), then run the cell again`,
  );
  error.name = 'ModuleNotFoundError';
  return error;
}
