/**
 * The coding runs' configuration and the repositories it admits. `code` in hangar.config.json (or
 * HANGAR_CODE__*) is the file layer; PUT /api/config patches an overlay kept in the store.
 * Read-only keys are refused there (422) but load from the file.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { formatIssues } from '../http/validate.js';
import { fail } from '../kernel/errors.js';
import type { Collection, Store } from '../kernel/store.js';
import { READ_ONLY_CONFIG_KEYS } from './config-keys.js';
import { type CodeConfig, CodeConfigSchema } from './schemas.js';

export class CodeRunConfig {
  private readonly overlays: Collection<Record<string, unknown>>;
  private readonly file: Record<string, unknown>;

  constructor(
    store: Store,
    /** The file layer (settings `code`); invalid, it stops the service from being built. */
    fileConfig: unknown,
    /** The workspace root: a repository named by a relative path is resolved against it. */
    private readonly root: string,
  ) {
    this.overlays = store.collection<Record<string, unknown>>('coderun_config');
    const parsed = CodeConfigSchema.safeParse(fileConfig ?? {});
    if (!parsed.success) throw new Error(`invalid setting ${formatIssues(parsed.error.issues, 'code')}`);
    this.file = (fileConfig ?? {}) as Record<string, unknown>;
  }

  /** The file layer under the stored overlay. */
  async current(): Promise<CodeConfig> {
    const overlay = (await this.overlays.get('overlay')) ?? {};
    return CodeConfigSchema.parse({ ...this.file, ...overlay });
  }

  /** Patch the configuration over HTTP; read-only keys are refused, naming the key. */
  async patch(patch: unknown): Promise<CodeConfig> {
    if (!patch || typeof patch !== 'object' || Array.isArray(patch)) throw fail('HANGAR_CODERUN_CONFIG_NOT_OBJECT', {});
    const readOnly = Object.keys(patch).filter((k) => (READ_ONLY_CONFIG_KEYS as readonly string[]).includes(k));
    if (readOnly.length) {
      const several = readOnly.length > 1;
      throw fail('HANGAR_CODERUN_CONFIG_READ_ONLY', {
        keys: readOnly.join(', '),
        verb: several ? 'are' : 'is',
        them: several ? 'them' : 'it',
      });
    }
    const overlay = { ...((await this.overlays.get('overlay')) ?? {}), ...(patch as Record<string, unknown>) };
    const parsed = CodeConfigSchema.safeParse({ ...this.file, ...overlay });
    if (!parsed.success) throw fail('HANGAR_CODERUN_INVALID', { problems: formatIssues(parsed.error.issues, 'body') });
    await this.overlays.put('overlay', overlay);
    return parsed.data;
  }

  /**
   * The repository a request names (`?repo=`, a body's `repo`), else `code.repo`, else the
   * workspace. Only the workspace and the folders in `code.repos` (each with everything beneath it)
   * may be named, symlinks resolved, or a request could have Hangar write team files and commits
   * anywhere on the machine: 403, before the folder's existence is even looked at. `code.repo`
   * written in hangar.config.json counts as listed; set over HTTP it does not.
   */
  async repoOf(requested?: string): Promise<string> {
    const config = await this.current();
    const given = requested ?? config.repo ?? '.';
    const repo = path.resolve(this.root, given);
    const roots = this.repoRoots();
    const refused = () => fail('HANGAR_CODERUN_REPO_OUTSIDE', { repo: given });
    if (!roots.some((root) => isWithin(repo, root))) throw refused();
    if (!existsSync(repo) || !statSync(repo).isDirectory()) throw fail('HANGAR_CODERUN_REPO_NOT_FOLDER', { repo: given });
    const real = realpathSync(repo);
    if (!roots.some((root) => isWithin(real, root))) throw refused();
    return repo;
  }

  /** The workspace, `code.repos` and the file's `code.repo`, each as written and with symlinks resolved. */
  private repoRoots(): string[] {
    const file = CodeConfigSchema.parse(this.file);
    const roots = [this.root, ...file.repos, ...(file.repo ? [file.repo] : [])].map((r) => path.resolve(this.root, r));
    return [...new Set(roots.flatMap((r) => (existsSync(r) ? [r, realpathSync(r)] : [r])))];
  }
}

/** Whether `target` is `root` or lies beneath it (both absolute and resolved). */
function isWithin(target: string, root: string): boolean {
  const relative = path.relative(root, target);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}
