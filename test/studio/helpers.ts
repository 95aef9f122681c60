import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentSource, makeWorkspace } from '../support/server.js';
import type { SseFrame } from '../support/sse.js';

const shipped = fileURLToPath(new URL('../../agents', import.meta.url));

/**
 * A workspace with the shipped studio demo, the word-stats agent it calls as a subagent and the
 * echo function agent, as a fresh install has them — plus `slow`, a test agent whose one node
 * waits until it is cancelled (for busy threads and cancellation).
 */
export async function studioWorkspace(extra: Record<string, string> = {}): Promise<string> {
  const root = await makeWorkspace({
    ...extra,
    'agents/slow.ts': agentSource(`{
      // Inline (README "Isolation"): the studio tests pin a node that returns inside its abort handler
      // reaching node_end before the cancel answers, which only holds on the server's own thread.
      isolation: 'inline',
      graph: {
        nodes: {
          wait: async (state, ctx) => {
            await new Promise((resolve) => {
              const timer = setTimeout(resolve, 10000);
              ctx.signal.addEventListener('abort', () => { clearTimeout(timer); resolve(undefined); });
            });
            return { response: 'waited' };
          },
          after: () => ({ response: 'after' }),
        },
        edges: [{ from: 'wait', to: 'after' }],
        entry: 'wait',
      },
    }`),
  });
  await mkdir(path.join(root, 'agents'), { recursive: true });
  for (const file of ['studio-demo.ts', 'word-stats.ts', 'echo.ts']) {
    await copyFile(path.join(shipped, file), path.join(root, 'agents', file));
  }
  return root;
}

/** The event types of a stream, in order. */
export const typesOf = (frames: SseFrame[]) => frames.map((f) => f.data.type as string);
