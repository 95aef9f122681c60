import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { makeWorkspace } from './server.js';

/** A workspace whose `.hangar/hangar.db` holds 200 records and then had 8 KB of its pages scribbled over. */
export async function damagedWorkspace(): Promise<string> {
  const root = await makeWorkspace();
  const file = path.join(root, '.hangar', 'hangar.db');
  await mkdir(path.dirname(file), { recursive: true });
  const store = new SqliteStore(file);
  for (let i = 0; i < 200; i++) await store.collection('threads').put(`t${i}`, { id: `t${i}`, title: 'x'.repeat(400) });
  store.close();
  const handle = await open(file, 'r+');
  await handle.write(Buffer.alloc(8192, 0xab), 0, 8192, 8192);
  await handle.close();
  return root;
}
