/// <reference lib="dom" />
import { html } from 'htm/preact';
import { marked } from 'marked';

/**
 * Rich outputs of notebook cells (nbformat 4 shapes): streams, results and displays by their
 * richest mime type (HTML tables, SVG charts, PNG/JPEG images, Markdown, JSON, text), and errors.
 *
 * HTML from a cell is the user's own code's output, but it is still cleaned before it is inserted:
 * scripts, frames, forms, styles and event-handler attributes are dropped and only http(s)/data
 * URLs survive, so a pasted snippet cannot act in the app. (The page's CSP would block inline
 * scripts anyway; this keeps the markup itself inert.) SVG is shown through <img>, where scripts
 * never run.
 */
export type Output =
  | { output_type: 'stream'; name: 'stdout' | 'stderr'; text: string }
  | { output_type: 'display_data' | 'execute_result'; data: Record<string, unknown> }
  | { output_type: 'error'; ename: string; evalue: string; traceback: string[] };

const DROP = new Set(['SCRIPT', 'IFRAME', 'FRAME', 'OBJECT', 'EMBED', 'FORM', 'STYLE', 'LINK', 'META', 'BASE', 'TEMPLATE']);

export function sanitizeHtml(markup: string): string {
  const doc = new DOMParser().parseFromString(`<body>${markup}</body>`, 'text/html');
  const walk = (node: Element) => {
    for (const child of Array.from(node.children)) {
      if (DROP.has(child.tagName)) {
        child.remove();
        continue;
      }
      for (const attr of Array.from(child.attributes)) {
        const name = attr.name.toLowerCase();
        const url = ['href', 'src', 'xlink:href', 'action', 'formaction'].includes(name);
        if (name.startsWith('on') || name === 'style' || name === 'srcdoc' || (url && !/^(https?:|data:image\/|#)/i.test(attr.value.trim()))) {
          child.removeAttribute(attr.name);
        }
      }
      if (child.tagName === 'A') child.setAttribute('rel', 'noopener noreferrer');
      walk(child);
    }
  };
  walk(doc.body);
  return doc.body.innerHTML;
}

export function renderMarkdown(source: string): string {
  return sanitizeHtml(marked.parse(source, { async: false }));
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
const text = (value: unknown) => (Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : JSON.stringify(value, null, 2));

function MimeBundle({ data }: { data: Record<string, unknown> }) {
  if ('text/html' in data) return html`<div class="out-html" dangerouslySetInnerHTML=${{ __html: sanitizeHtml(text(data['text/html'])) }}></div>`;
  if ('image/svg+xml' in data) {
    const svg = text(data['image/svg+xml']);
    return html`<img class="out-image" alt="chart" src=${`data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`} />`;
  }
  for (const mime of ['image/png', 'image/jpeg']) {
    if (mime in data) return html`<img class="out-image" alt="image output" src=${`data:${mime};base64,${text(data[mime]).replace(/\s/g, '')}`} />`;
  }
  if ('text/markdown' in data) return html`<div class="markdown" dangerouslySetInnerHTML=${{ __html: renderMarkdown(text(data['text/markdown'])) }}></div>`;
  if ('application/json' in data && !('text/plain' in data)) return html`<pre class="out-text">${JSON.stringify(data['application/json'], null, 2)}</pre>`;
  return html`<pre class="out-text">${text(data['text/plain'] ?? '')}</pre>`;
}

export function Outputs({ outputs }: { outputs: Output[] }) {
  if (outputs.length === 0) return null;
  return html`<div class="outputs" data-testid="outputs">
    ${outputs.map((output) => {
      switch (output.output_type) {
        case 'stream':
          return html`<pre class=${`out-stream ${output.name}`}>${text(output.text)}</pre>`;
        case 'error':
          return html`<pre class="out-error" role="alert">${output.ename}: ${output.evalue}${output.traceback.length ? '\n' + output.traceback.join('\n').replace(ANSI, '') : ''}</pre>`;
        default:
          return html`<${MimeBundle} data=${output.data} />`;
      }
    })}
  </div>`;
}
