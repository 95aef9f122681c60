import { type Dirent, type FSWatcher, readdirSync, statSync, watch } from 'node:fs';
import path from 'node:path';

/**
 * Watches a directory tree with one non-recursive `fs.watch` per directory (inotify on Linux,
 * FSEvents / ReadDirectoryChangesW elsewhere), adding a watch when a directory appears and closing
 * it when the directory goes.
 *
 * Not `{ recursive: true }`: on Linux, Node 20 emulates it and loses track of a file once an editor
 * has saved it atomically twice (write a temporary file, rename it over the original — vim,
 * JetBrains, our own notebook saves); later saves go unseen. Not chokidar: its change throttling was
 * measured dropping saves made within ~15 ms of each other. Callers debounce: one save is several
 * raw events.
 */
export interface TreeWatcher {
  close(): void;
}

export interface WatchTreeOptions {
  /** Directory names never descended into. */
  skipDirectory?: (name: string) => boolean;
}

const DEFAULT_SKIP = (name: string) => name === 'node_modules' || name === '.git';

/** `onChange` receives the absolute path of each file or directory that appeared, changed or went. */
export function watchTree(root: string, onChange: (changed: string) => void, options: WatchTreeOptions = {}): TreeWatcher {
  const skip = options.skipDirectory ?? DEFAULT_SKIP;
  const watchers = new Map<string, FSWatcher>();

  const unwatch = (dir: string) => {
    for (const [watched, watcher] of watchers) {
      if (watched === dir || watched.startsWith(dir + path.sep)) {
        watcher.close();
        watchers.delete(watched);
      }
    }
  };

  /** Returns whether `dir` was newly watched. */
  const add = (dir: string): boolean => {
    if (watchers.has(dir) || skip(path.basename(dir))) return false;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, (_event, name) => {
        if (!name) return;
        const changed = path.join(dir, name.toString());
        if (statSync(changed, { throwIfNoEntry: false })?.isDirectory()) {
          // What was written into a new directory before its watch started is reported too.
          if (add(changed)) for (const file of filesUnder(changed, skip)) onChange(file);
        } else {
          unwatch(changed);
        }
        onChange(changed);
      });
    } catch {
      return false; // gone already, or not a directory
    }
    watcher.on('error', () => unwatch(dir));
    watchers.set(dir, watcher);
    for (const child of listDirectory(dir)) if (child.isDirectory()) add(path.join(dir, child.name));
    return true;
  };

  add(root);
  return { close: () => unwatch(root) };
}

function filesUnder(dir: string, skip: (name: string) => boolean): string[] {
  const files: string[] = [];
  for (const child of listDirectory(dir)) {
    const full = path.join(dir, child.name);
    if (child.isFile()) files.push(full);
    else if (child.isDirectory() && !skip(child.name)) files.push(...filesUnder(full, skip));
  }
  return files;
}

/** A directory's entries; none when it went away meanwhile. */
function listDirectory(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}
