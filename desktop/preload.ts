/**
 * Preload script of the Hangar window. Sandboxed preloads are CommonJS and may only require
 * 'electron' (a limited one), so this is bundled to CJS by desktop/build.ts with electron external.
 */
import type { ElectronPreload } from './electron-api.js';
import { exposeBridge } from './bridge.js';

declare const require: (id: string) => unknown;
exposeBridge(require('electron') as ElectronPreload);
