/**
 * `${NAME}` references in endpoint definitions (spec rule 6).
 *
 * A definition keeps its templates as written; values are read from the environment only at the
 * moment a request needs them, so rotating a secret in the environment takes effect on the next call
 * and a value is never part of the registry, `/info`, OpenAPI or a stored record.
 *
 * Every value resolved here is also given to the call's `Redactor`, which scrubs it from any error
 * text before that text leaves the endpoint layer (an upstream that echoes our Authorization header
 * back in its error body must not leak it to the caller or the log).
 */

export type Env = Readonly<Record<string, string | undefined>>;

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** A missing variable. The message names the variable, never a value. */
export class MissingEnvError extends Error {
  readonly variable: string;
  constructor(variable: string, field: string) {
    super(`environment variable ${variable} is not set (referenced by ${field})`);
    this.name = 'MissingEnvError';
    this.variable = variable;
  }
}

/** Variable names a template refers to, in order of appearance, without duplicates. */
export function referencedVariables(template: string): string[] {
  return [...new Set([...template.matchAll(REFERENCE)].map((m) => m[1]))];
}

/**
 * Replace every `${NAME}` in `template` with its value from `env`.
 * `field` names the definition field in the error (e.g. `upstreams.a.auth.api_key`).
 * An empty value counts as set: `API_PREFIX=` is a deliberate empty string.
 */
export function interpolate(template: string, env: Env, field: string, redactor?: Redactor): string {
  return template.replace(REFERENCE, (_, name: string) => {
    const value = env[name];
    if (value === undefined) throw new MissingEnvError(name, field);
    redactor?.add(value);
    return value;
  });
}

/**
 * Collects the secret values seen during one call and removes them from text.
 * Values shorter than `MIN_SECRET_LENGTH` are ignored: redacting "1" or "us" would mangle every
 * message while protecting nothing worth protecting — an accepted edge case.
 *
 * `seed` names values known to be secret before the call resolves any (every `${NAME}` the
 * endpoint references): a handler may throw with one in its message without having made the
 * upstream call that would have resolved it. It is read on the first `redact`, so a call that
 * succeeds never pays for it.
 */
export class Redactor {
  static readonly MIN_SECRET_LENGTH = 3;
  static readonly MASK = '***';
  readonly #secrets = new Set<string>();
  #seed: (() => Iterable<string | undefined>) | undefined;

  constructor(seed?: () => Iterable<string | undefined>) {
    this.#seed = seed;
  }

  add(value: string | undefined): void {
    if (!value || value.length < Redactor.MIN_SECRET_LENGTH) return;
    this.#secrets.add(value);
    // The same secret may surface encoded: in a URL, or inside a Basic credential.
    const encoded = encodeURIComponent(value);
    if (encoded !== value) this.#secrets.add(encoded);
  }

  redact(text: string): string {
    if (this.#seed) {
      const seed = this.#seed;
      this.#seed = undefined;
      for (const value of seed()) this.add(value);
    }
    if (this.#secrets.size === 0) return text;
    // Longest first, so a secret containing another is masked whole.
    const secrets = [...this.#secrets].sort((a, b) => b.length - a.length);
    let out = text;
    for (const secret of secrets) out = out.split(secret).join(Redactor.MASK);
    return out;
  }
}
