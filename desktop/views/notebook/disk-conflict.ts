/// <reference lib="dom" />
import { html } from 'htm/preact';

/**
 * The file changed on disk while this session had edits of its own: shown after a refused save
 * (409 `HANGAR_NOTEBOOK_SAVE_CONFLICT`) or when the server reports the change live. The user
 * picks, as JupyterLab's "File Changed" dialog asks: take the disk version, or overwrite it.
 */
export interface DiskConflict {
  /** `notebook diff` text: a = this session, b = on disk. */
  diff: string;
  why: 'save' | 'disk';
}

export function DiskConflictBanner({
  conflict,
  onReload,
  onOverwrite,
  onDismiss,
}: {
  conflict: DiskConflict;
  onReload: () => void;
  onOverwrite: () => void;
  onDismiss: () => void;
}) {
  const headline =
    conflict.why === 'save'
      ? 'Not saved: the file changed on disk since this notebook was opened.'
      : 'The file changed on disk, and this notebook has unsaved edits.';
  return html`<div class="alert disk-conflict" role="alertdialog" aria-labelledby="disk-conflict-title">
    <p id="disk-conflict-title"><strong>${headline}</strong> Lines marked <code>-</code> are yours, <code>+</code> the disk's.</p>
    <pre class="diff" tabindex="0" aria-label="Differences between this notebook and the file on disk">${conflict.diff}</pre>
    <div class="toolbar">
      <button class="primary" onClick=${onReload}>Reload from disk</button>
      <button class="danger" onClick=${onOverwrite}>Overwrite with mine</button>
      <button onClick=${onDismiss}>Decide later</button>
    </div>
  </div>`;
}
