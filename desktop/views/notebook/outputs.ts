/// <reference lib="dom" />
import { html } from 'htm/preact';
import { marked } from 'marked';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Output } from '../../../core/notebook/schemas.js';
import { UI_MIME, UiControl, type UiPayload } from './ui-control.js';

/**
 * Rich outputs of notebook cells (nbformat 4 shapes): streams, results and displays by their
 * richest mime type (HTML tables, SVG charts, PNG/JPEG images, Markdown, JSON, text), and errors.
 *
 * HTML from a cell is whatever the notebook says — an .ipynb someone sent can carry any script —
 * so it never acts in the app:
 * - Inert markup (tables, text, images: nothing the cleaner below would remove) is inserted into
 *   the page, where it is styled and searchable like the rest of the view.
 * - Active markup (scripts, styles, handlers, frames, forms) runs in a frame of
 *   /ui/output-frame.html with `sandbox="allow-scripts"` and no `allow-same-origin`, as Jupyter and
 *   marimo isolate rich outputs: a chart library works, but in an opaque origin that can neither
 *   touch this page nor read the API. Not an `srcdoc` frame: srcdoc inherits the UI's CSP, which
 *   allows no inline script, so the markup is posted to the frame page instead.
 * Markdown is always cleaned and inserted. SVG is shown through <img>, where scripts never run.
 */

const DROP = new Set(['SCRIPT', 'IFRAME', 'FRAME', 'OBJECT', 'EMBED', 'FORM', 'STYLE', 'LINK', 'META', 'BASE', 'TEMPLATE']);

/** The markup with everything that could act removed, and whether anything was. */
export function inspectHtml(markup: string): { clean: string; active: boolean } {
  const doc = new DOMParser().parseFromString(`<body>${markup}</body>`, 'text/html');
  let active = false;
  const walk = (node: Element) => {
    for (const child of Array.from(node.children)) {
      if (DROP.has(child.tagName)) {
        child.remove();
        active = true;
        continue;
      }
      for (const attr of Array.from(child.attributes)) {
        const name = attr.name.toLowerCase();
        const url = ['href', 'src', 'xlink:href', 'action', 'formaction'].includes(name);
        if (
          name.startsWith('on') ||
          name === 'style' ||
          name === 'srcdoc' ||
          (url && !/^(https?:|data:image\/|#)/i.test(attr.value.trim()))
        ) {
          child.removeAttribute(attr.name);
          active = true;
        }
      }
      if (child.tagName === 'A') child.setAttribute('rel', 'noopener noreferrer');
      walk(child);
    }
  };
  walk(doc.body);
  return { clean: doc.body.innerHTML, active };
}

export function sanitizeHtml(markup: string): string {
  return inspectHtml(markup).clean;
}

/** Tallest a frame grows before it scrolls: a runaway output must not make the page endless. */
const MAX_FRAME_HEIGHT = 4000;

/**
 * Active cell HTML in a sandboxed frame (see the file's comment). The frame page takes the
 * markup once it has loaded and answers with its height; messages from any other window, or of
 * another shape, are ignored.
 */
function OutputFrame({ markup }: { markup: string }) {
  const frame = useRef<HTMLIFrameElement>(null);
  const [height, setHeight] = useState(24);
  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      if (!frame.current || event.source !== frame.current.contentWindow) return;
      const data = event.data as { type?: unknown; height?: unknown } | null;
      if (data?.type === 'hangar-output-size' && typeof data.height === 'number' && Number.isFinite(data.height)) {
        setHeight(Math.min(Math.max(Math.ceil(data.height), 16), MAX_FRAME_HEIGHT));
      }
    };
    window.addEventListener('message', onMessage);
    return () => window.removeEventListener('message', onMessage);
  }, []);
  const send = () => {
    const target = frame.current;
    if (!target?.contentWindow) return;
    // The frame's origin is opaque, so '*' is the only target origin that reaches it.
    target.contentWindow.postMessage({ type: 'hangar-output', html: markup, color: getComputedStyle(target).color }, '*');
  };
  return html`<iframe
    ref=${frame}
    class="out-frame"
    title="HTML output"
    sandbox="allow-scripts"
    src="output-frame.html"
    style=${{ height: `${height}px` }}
    onLoad=${send}
  ></iframe>`;
}

function HtmlOutput({ markup }: { markup: string }) {
  const { clean, active } = useMemo(() => inspectHtml(markup), [markup]);
  // A new frame per markup: the frame page renders once, so a changed output gets a fresh one.
  if (active) return html`<${OutputFrame} markup=${markup} key=${markup} />`;
  return html`<div class="out-html" dangerouslySetInnerHTML=${{ __html: clean }}></div>`;
}

export function renderMarkdown(source: string): string {
  return sanitizeHtml(marked.parse(source, { async: false }));
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
const text = (value: unknown) =>
  Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : JSON.stringify(value, null, 2);

function MimeBundle({ data, onUiChange }: { data: Record<string, unknown>; onUiChange?: (id: string, value: unknown) => void }) {
  if (UI_MIME in data) return html`<${UiControl} payload=${data[UI_MIME] as UiPayload} send=${onUiChange} />`;
  if ('text/html' in data) return html`<${HtmlOutput} markup=${text(data['text/html'])} />`;
  if ('image/svg+xml' in data) {
    const svg = text(data['image/svg+xml']);
    return html`<img class="out-image" alt="chart" src=${`data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`} />`;
  }
  for (const mime of ['image/png', 'image/jpeg']) {
    if (mime in data)
      return html`<img class="out-image" alt="image output" src=${`data:${mime};base64,${text(data[mime]).replace(/\s/g, '')}`} />`;
  }
  if ('text/markdown' in data)
    return html`<div class="markdown" dangerouslySetInnerHTML=${{ __html: renderMarkdown(text(data['text/markdown'])) }}></div>`;
  if ('application/json' in data && !('text/plain' in data))
    return html`<pre class="out-text">${JSON.stringify(data['application/json'], null, 2)}</pre>`;
  return html`<pre class="out-text">${text(data['text/plain'] ?? '')}</pre>`;
}

/** `onUiChange`: where interactive elements send a new value (absent: the controls change nothing). */
export function Outputs({ outputs, onUiChange }: { outputs: Output[]; onUiChange?: (id: string, value: unknown) => void }) {
  if (outputs.length === 0) return null;
  return html`<div class="outputs" data-testid="outputs">
    ${outputs.map((output) => {
      switch (output.output_type) {
        case 'stream':
          return html`<pre class=${`out-stream ${output.name}`}>${text(output.text)}</pre>`;
        case 'error':
          // As Jupyter: the traceback when there is one (its first line already is "ename: evalue"), else the message.
          return html`<pre class="out-error" role="alert">${output.traceback.length ? output.traceback.join('\n').replace(ANSI, '') : `${output.ename}: ${output.evalue}`}</pre>`;
        default:
          return html`<${MimeBundle} data=${output.data} onUiChange=${onUiChange} />`;
      }
    })}
  </div>`;
}
