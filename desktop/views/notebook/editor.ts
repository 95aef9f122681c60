/// <reference lib="dom" />
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { javascript } from '@codemirror/lang-javascript';
import { bracketMatching, defaultHighlightStyle, HighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { EditorState } from '@codemirror/state';
import { EditorView, highlightActiveLine, keymap, lineNumbers, placeholder as placeholderText } from '@codemirror/view';
import { html } from 'htm/preact';
import { render } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/**
 * A CodeMirror 6 editor for one cell. Tab is left to the browser (no indentWithTab), so keyboard
 * users can always leave the editor; Shift+Enter or Ctrl/Cmd+Enter runs the cell. The document is
 * owned by the editor while it is mounted: a new `value` from outside replaces it only when it
 * differs (a reload or another client's edit) and the editor is not focused, so typing never
 * fights a re-render.
 */
/**
 * CodeMirror's default highlighting with each colour read from a CSS variable (`--cm-708` for
 * `#708`, falling back to it), so styles.css gives the dark theme its own readable palette. The
 * light colours on a dark background made definitions (`#00f`) all but invisible.
 */
const themedHighlightStyle = HighlightStyle.define(
  defaultHighlightStyle.specs.map((spec) =>
    typeof spec.color === 'string' ? { ...spec, color: `var(--cm-${spec.color.replace('#', '')}, ${spec.color})` } : spec,
  ),
);

/** The per-load style nonce the server put in the page (see core/ui/csp.ts). */
const styleNonce = document.querySelector<HTMLMetaElement>('meta[name="hangar-style-nonce"]')?.content ?? '';

export interface CodeEditorProps {
  value: string;
  language: 'javascript' | 'markdown' | 'text';
  label: string;
  onChange: (value: string) => void;
  onRun: () => void;
}

export function CodeEditor({ value, language, label, onChange, onRun }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  // Callbacks change every render; the editor reads the latest through refs.
  const handlers = useRef({ onChange, onRun });
  handlers.current = { onChange, onRun };
  // Set while a new `value` is written into the editor, so it is not echoed back as an edit.
  const external = useRef(false);

  useEffect(() => {
    const run = () => (handlers.current.onRun(), true);
    const state = EditorState.create({
      doc: value,
      extensions: [
        lineNumbers(),
        history(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        syntaxHighlighting(themedHighlightStyle, { fallback: true }),
        keymap.of([{ key: 'Shift-Enter', run }, { key: 'Mod-Enter', run }, ...defaultKeymap, ...historyKeymap]),
        language === 'javascript' ? javascript({ typescript: true }) : [],
        placeholderText(language === 'markdown' ? 'Markdown…' : 'Code… (Shift+Enter runs)'),
        EditorView.lineWrapping,
        EditorView.cspNonce.of(styleNonce),
        EditorView.contentAttributes.of({ 'aria-label': label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged && !external.current) handlers.current.onChange(update.state.doc.toString());
        }),
      ],
    });
    view.current = new EditorView({ state, parent: host.current! });
    return () => view.current?.destroy();
  }, [language]);

  useEffect(() => {
    const current = view.current;
    // While the person types, the editor's text is the newest: a server echo of an earlier save
    // must not be pushed back in (it would undo keystrokes and ping-pong with the input handler).
    if (current && !current.hasFocus && current.state.doc.toString() !== value) {
      external.current = true;
      try {
        current.dispatch({ changes: { from: 0, to: current.state.doc.length, insert: value } });
      } finally {
        external.current = false;
      }
    }
  }, [value]);

  return html`<div class="editor" ref=${host}></div>`;
}

/**
 * A CodeEditor outside any Preact tree, for the `notebook start` / `dev` page, which is plain DOM
 * and loads this module as a bundle of its own (desktop/build.ts `buildCellEditor`): both pages
 * edit cells with this one component. `update` renders it again with new props (a new `value`
 * follows the rules above); `destroy` unmounts it, which destroys the CodeMirror view.
 */
export function mountCodeEditor(parent: HTMLElement, props: CodeEditorProps): { update(props: CodeEditorProps): void; destroy(): void } {
  const draw = (next: CodeEditorProps) => render(html`<${CodeEditor} ...${next} />`, parent);
  draw(props);
  return { update: draw, destroy: () => render(null, parent) };
}
