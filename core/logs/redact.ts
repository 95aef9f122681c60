/**
 * Making a value safe and small enough to keep in the invocation log: secrets are replaced by
 * `[REDACTED]` — by key name (password, token, api_key, authorization, …), by value shape (bearer
 * tokens, `sk-…`, GitHub and Slack tokens, AWS key ids, JWTs) and by exact match with the secrets
 * this server knows (its configured tokens) — then the JSON is cut at `maxChars`.
 *
 * Accepted limit: a secret under an innocent key in a shape we don't know is kept. Logs are local
 * files; redaction is a guard against the common leaks, not a data-loss-prevention system.
 */
export const REDACTED = '[REDACTED]';

const SECRET_KEY =
  /(pass(word|wd|phrase)?|secret|token|api[-_]?key|apikey|^auth$|authorization|credential|private[-_]?key|cookie|session[-_]?(id|key)|signature)/i;

const SECRET_VALUES: RegExp[] = [
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}/gi,
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
];

export interface Redactor {
  /** JSON-safe, redacted copy of `value`, or a string preview when its JSON is longer than the limit. */
  apply(value: unknown): { value: unknown; truncated: boolean };
  text(value: string): string;
}

export function createRedactor(options: { maxChars: number; knownSecrets?: () => string[] }): Redactor {
  const text = (value: string): string => {
    let out = value;
    for (const pattern of SECRET_VALUES)
      out = out.replace(pattern, (match) => (/^(bearer|basic)\s/i.test(match) ? `${match.split(/\s+/)[0]} ${REDACTED}` : REDACTED));
    for (const secret of options.knownSecrets?.() ?? [])
      if (secret.length >= 6 && out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  };
  const replacer = (key: string, value: unknown): unknown => {
    // `prompt_tokens`, `max_tokens`: a number under a key ending in "tokens" is a count of a model's
    // tokens, not a credential.
    if (key && SECRET_KEY.test(key) && value !== null && typeof value !== 'object' && !(typeof value === 'number' && /tokens$/i.test(key)))
      return REDACTED;
    if (typeof value === 'string') return text(value);
    if (typeof value === 'bigint') return String(value);
    return value;
  };
  return {
    text,
    apply(value) {
      if (value === undefined) return { value: null, truncated: false };
      let json: string | undefined;
      try {
        json = JSON.stringify(value, replacer);
      } catch {
        json = JSON.stringify(text(String(value)));
      }
      if (json === undefined) return { value: null, truncated: false };
      if (json.length <= options.maxChars) return { value: JSON.parse(json), truncated: false };
      return { value: `${json.slice(0, options.maxChars)}…`, truncated: true };
    },
  };
}
