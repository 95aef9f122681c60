/**
 * tinyglobby's `glob`, imported on first use: its fdir looks up the optional picomatch in
 * node_modules as it loads (~7 ms of every start), and a start never globs: discovery lists its
 * folders with readdir and globs only a folder that appears while it watches.
 */
import type { GlobOptions } from 'tinyglobby';

export async function glob(patterns: string | readonly string[], options?: Omit<GlobOptions, 'patterns'>): Promise<string[]> {
  return (await import('tinyglobby')).glob(patterns, options);
}
