/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { MergeConflict, MergeSide } from '../../../core/notebook/merge.js';

/**
 * The file changed on disk while this session had edits of its own: shown after a refused save
 * (409 `HANGAR_NOTEBOOK_SAVE_CONFLICT`) or when the server reports the change live. The user
 * picks, as JupyterLab's "File Changed" dialog asks: take the disk version, overwrite it — or, which
 * JupyterLab lacks, merge: the server takes the disk's changes cell by cell and keeps these. Cells
 * changed on both sides come back as `conflicts`, shown side by side for the user to pick one.
 */
export interface DiskConflict {
  /** `notebook diff` text: a = this session, b = on disk. */
  diff: string;
  why: 'save' | 'disk';
  /** Cells a merge found changed on both sides (409 `HANGAR_NOTEBOOK_MERGE_CONFLICT`), until a side is picked. */
  conflicts?: MergeConflict[];
}

const CHANGE_TEXT: Record<'ours' | 'theirs', string> = { ours: 'Yours', theirs: 'On disk' };

function Side({ side, cell }: { side: MergeSide; cell: MergeConflict['ours'] }) {
  return html`<figure class="merge-side">
    <figcaption>${CHANGE_TEXT[side]}</figcaption>
    ${cell ? html`<pre class="mono">${cell.source}</pre>` : html`<p class="muted">(cell deleted)</p>`}
  </figure>`;
}

/** Each conflicting cell side by side, with a choice of side; merges when every cell has one. */
function MergeChoices({
  conflicts,
  label,
  onMerge,
}: {
  conflicts: MergeConflict[];
  label: (cellId: string) => string;
  onMerge: (picked: Record<string, MergeSide>) => void;
}) {
  const [picked, setPicked] = useState<Record<string, MergeSide>>({});
  const left = conflicts.filter((c) => !picked[c.cell]).length;
  return html`<div class="merge-conflicts">
    <p>${conflicts.length} cell(s) changed both here and on disk. Pick which text each keeps:</p>
    ${conflicts.map(
      (c) => html`<fieldset class="merge-conflict" key=${c.cell}>
        <legend>${label(c.cell)}</legend>
        <div class="merge-sides">
          <${Side} side="ours" cell=${c.ours} />
          <${Side} side="theirs" cell=${c.theirs} />
        </div>
        ${(['ours', 'theirs'] as const).map(
          (side) => html`<label>
            <input type="radio" name=${`merge-${c.cell}`} value=${side} checked=${picked[c.cell] === side}
              onChange=${() => setPicked((p) => ({ ...p, [c.cell]: side }))} />
            ${side === 'ours' ? 'Keep mine' : "Take the disk's"}
          </label>`,
        )}
      </fieldset>`,
    )}
    <button class="primary" disabled=${left > 0} onClick=${() => onMerge(picked)}>
      ${left > 0 ? `Merge (${left} left to pick)` : 'Merge with these choices'}
    </button>
  </div>`;
}

export function DiskConflictBanner({
  conflict,
  onReload,
  onOverwrite,
  onMerge,
  onDismiss,
  label,
}: {
  conflict: DiskConflict;
  /** How the view names a cell ("cell 2", or its name), as the dependencies panel does. */
  label: (cellId: string) => string;
  onReload: () => void;
  onOverwrite: () => void;
  onMerge: (resolutions: Record<string, MergeSide>) => void;
  onDismiss: () => void;
}) {
  const headline =
    conflict.why === 'save'
      ? 'Not saved: the file changed on disk since this notebook was opened.'
      : 'The file changed on disk, and this notebook has unsaved edits.';
  return html`<div class="alert disk-conflict" role="alertdialog" aria-labelledby="disk-conflict-title">
    <p id="disk-conflict-title"><strong>${headline}</strong> Lines marked <code>-</code> are yours, <code>+</code> the disk's.</p>
    <pre class="diff" tabindex="0" aria-label="Differences between this notebook and the file on disk">${conflict.diff}</pre>
    ${conflict.conflicts?.length ? html`<${MergeChoices} conflicts=${conflict.conflicts} label=${label} onMerge=${onMerge} />` : null}
    <div class="toolbar">
      <button class="primary" onClick=${() => onMerge({})} title="Take the disk's changes to cells you did not edit, keep yours, and save"
        hidden=${Boolean(conflict.conflicts?.length)}>Merge</button>
      <button onClick=${onReload}>Reload from disk</button>
      <button class="danger" onClick=${onOverwrite}>Overwrite with mine</button>
      <button onClick=${onDismiss}>Decide later</button>
    </div>
  </div>`;
}
