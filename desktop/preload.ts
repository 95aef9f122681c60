/**
 * Preload script of the Hangar window. Sandboxed preloads are CommonJS and may only require
 * 'electron' (a limited one), so this is bundled to CJS by desktop/build.ts with electron external.
 */

import { exposeBridge } from './bridge.js';
import type { ElectronPreload } from './electron-api.js';

declare const require: (id: string) => unknown;
exposeBridge(require('electron') as ElectronPreload);
