import { type Asset, buildViews } from '../../desktop/build.js';

/**
 * The UI's files, built from desktop/views/ on first request and kept for the life of the process.
 * Building lazily keeps server start-up (and every test that starts a server) free of the ~200 ms
 * bundle; the first /ui/ request pays it once. A failed build is not cached, so fixing the source
 * and reloading retries.
 */
let built: Promise<Map<string, Asset>> | undefined;

export function uiAssets(): Promise<Map<string, Asset>> {
  built ??= buildViews().catch((err: unknown) => {
    built = undefined;
    throw err;
  });
  return built;
}

/** The files served at /ui/<name>; nothing else under /ui/ is served. */
export const UI_FILES = ['index.html', 'app.js', 'app.css', 'app.js.map', 'app.css.map', 'output-frame.html'] as const;
export type UiFile = (typeof UI_FILES)[number];
