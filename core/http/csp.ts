/**
 * The Content-Security-Policy of the UI, shared by the server (`/ui/` responses) and the desktop
 * shell (which adds it to any app response that arrives without one).
 *
 * Everything the UI loads is served by this origin, so `'self'` is the whole allow-list: no inline
 * scripts or styles, no eval, no plugins, no framing. `connect-src` names the ws origin explicitly
 * because older Chromium builds did not treat `ws:` as matching `'self'`.
 *
 * `styleNonce`: the code editor (CodeMirror 6) injects its base styles as a <style> element, which
 * `style-src 'self'` blocks; the page gets a fresh nonce per load (in a meta tag the editor reads)
 * so exactly those elements are allowed. Scripts still come only from 'self', so no injected
 * markup can read the nonce and use it.
 */
export function uiContentSecurityPolicy(origin?: string, styleNonce?: string): string {
  const ws = origin ? ` ${origin.replace(/^http/, 'ws')}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self'${styleNonce ? ` 'nonce-${styleNonce}'` : ''}`,
    // Style attributes only (never <style> elements): the editor sets a few (tab-size) with
    // setAttribute. They cannot run code, and cell HTML has its style attributes stripped.
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    `connect-src 'self'${ws}`,
    // Cell HTML with scripts runs in frames of /ui/output-frame.html (sandboxed, see below).
    "frame-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

/**
 * The policy of every response that carries HTML a notebook or a user made — a cell's outputs
 * (`outputs.html`), the `notebook app` report, the UI's output frame — served on the API's origin.
 *
 * `sandbox` without `allow-same-origin` gives the document an opaque origin of its own, as
 * Jupyter Server does for the files it serves: its scripts run (a chart library works), but any
 * request they make to the API is cross-origin, so no response can be read (Hangar sends no CORS
 * headers) and a state-changing one carries `Origin: null`, which the cross-site guard refuses.
 * Forms, popups, top-level navigation and storage shared with the app are all withheld.
 */
export const OUTPUT_SANDBOX_POLICY = 'sandbox allow-scripts';

/** Headers for a response of untrusted HTML (see `OUTPUT_SANDBOX_POLICY`). */
export const untrustedHtmlHeaders = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': OUTPUT_SANDBOX_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
} as const;
