import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { defineAgent, END } from 'hangar';

/**
 * Publishes a note — but only after a person approves it. The graph is
 * draft → review (human approval) → publish, with a shortcut to END for an empty request.
 *
 * POST /invoke suspends with 202 at `review`; approve with
 * `{"approval_id": "...", "context": {"reviewer": "ada"}}` to publish, or reject to discard.
 * Publishing appends the note to `.hangar/outbox/notes.jsonl` in the workspace: a real side
 * effect, which is why it sits behind the approval and after it (a resumed node re-runs from its
 * start, so nothing is written before the decision).
 */
export default defineAgent({
  description: 'Drafts a note from the query and publishes it to the workspace outbox after a human approves.',
  version: '1.0.0',
  graph: {
    nodes: {
      draft: {
        description: 'Turn the request into a note',
        run: (state) => {
          const text = String(state.messages.at(-1)?.content ?? '').trim();
          return { note: text, response: text ? `Draft ready: "${text}"` : 'Nothing to publish.' };
        },
      },
      review: {
        type: 'approval',
        description: 'A person approves the note',
        message: (state) => `Publish this note? "${String(state.note)}"`,
      },
      publish: {
        description: 'Append the note to .hangar/outbox/notes.jsonl',
        run: async (state, ctx) => {
          const outbox = path.join(ctx.workspace, '.hangar', 'outbox');
          await mkdir(outbox, { recursive: true });
          const record = {
            note: state.note,
            approved_by: state.metadata.reviewer ?? null,
            thread_id: ctx.threadId,
            at: new Date().toISOString(),
          };
          await appendFile(path.join(outbox, 'notes.jsonl'), JSON.stringify(record) + '\n');
          ctx.tool('outbox.append', record);
          return { response: `Published: "${String(state.note)}"`, output: record };
        },
      },
    },
    edges: [
      { from: 'draft', to: END, when: (s) => !s.note, label: 'empty note' },
      { from: 'draft', to: 'review' },
      { from: 'review', to: 'publish' },
    ],
    entry: 'draft',
  },
});
