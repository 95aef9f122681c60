import { type Asset, buildCellEditor, buildViews } from '../../desktop/build.js';

/**
 * A build run on first request and kept for the life of the process. Building lazily keeps server
 * start-up (and every test that starts a server) free of the ~200 ms bundle; the first request
 * pays it once. A failed build is not cached, so fixing the source and reloading retries.
 */
function builtOnce<T>(build: () => Promise<T>): () => Promise<T> {
  let built: Promise<T> | undefined;
  return () => {
    built ??= build().catch((err: unknown) => {
      built = undefined;
      throw err;
    });
    return built;
  };
}

/** The UI's files, built from desktop/views/. */
export const uiAssets: () => Promise<Map<string, Asset>> = builtOnce(() => buildViews());

/**
 * The notebook cell editor of the UI's notebook view, bundled on its own for the `notebook start`
 * / `dev` page (core/notebook/server.ts serves it; the CLI hands it this function, since a
 * subsystem may not reach the desktop's views).
 */
export const cellEditorAsset: () => Promise<Asset> = builtOnce(() => buildCellEditor());

/** The files served at /ui/<name>; nothing else under /ui/ is served. */
export const UI_FILES = ['index.html', 'app.js', 'app.css', 'app.js.map', 'app.css.map', 'output-frame.html'] as const;
export type UiFile = (typeof UI_FILES)[number];
