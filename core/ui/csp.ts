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
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}
