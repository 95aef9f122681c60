import { type AgentState, defineAgent, END, z } from 'hangar';

/**
 * Turns a request into a short brief that a person approves before it is final — and a tour of
 * what the studio (/studio/agents/studio-demo/...) shows of a run:
 *
 *   plan     (planner)   splits the request into todos, reported with the planning tool
 *                        `write_todos` → `task_update` events
 *   analyze  (subagent)  runs the shipped `word-stats` agent on the request → `subagent_start`/`_end`
 *   draft    (llm)       writes the brief. With a model configured it asks the model, and every
 *                        token is a `message_chunk`; without one it composes the brief from the
 *                        todos and the statistics, so the agent is useful offline.
 *   review   (approval)  a person approves (`breakpoint_hit`, reason `interrupt`); resume with
 *                        `{"value": {"reviewer": "ada"}}`, or `"action": "reject"`. Skipped when
 *                        the request's `metadata.auto_approve` is true.
 *   finalize            the answer, with every todo completed.
 *
 * A request with no words fails at `draft` (word-stats counted none): the `run_error` path.
 * Everything the nodes pass on is in the state, so editing it (POST …/state) at a breakpoint
 * changes what the next nodes do, e.g. `{"updates": {"todos": [...]}}` before `draft`.
 */

interface Todo {
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
}

interface Stats {
  words: number;
  sentences: number;
  top_words: Array<[string, number]>;
  reading_ease: number;
}

const todosOf = (state: AgentState): Todo[] => (Array.isArray(state.todos) ? (state.todos as Todo[]) : []);

/** The request is the newest user message: on a thread's later turns the earlier ones are history. */
function requestOf(state: AgentState): string {
  const last = [...state.messages].reverse().find((m) => m.role === 'user');
  return String(last?.content ?? '').trim();
}

function statsOf(state: AgentState): Stats | undefined {
  const results = state.subagent_results as Record<string, { output?: unknown }> | undefined;
  return results?.analyze?.output as Stats | undefined;
}

/** "compare prices, book a hotel and pack" → three todos; a request with no separators is one. */
export function splitTodos(request: string): Todo[] {
  const parts = request
    .split(/\s*(?:[,;\n]|\band then\b|\band\b|\bthen\b)\s*/i)
    .map((part) => part.trim())
    .filter(Boolean);
  return (parts.length ? parts : [request]).slice(0, 8).map((content) => ({ content, status: 'pending' }));
}

function composeBrief(request: string, todos: Todo[], stats: Stats): string {
  const keywords = stats.top_words.map(([word]) => word).slice(0, 3);
  return [
    `Brief: ${request}`,
    ...todos.map((todo, i) => `${i + 1}. ${todo.content}`),
    `(${stats.words} words; key terms: ${keywords.join(', ') || 'none'}; reading ease ${stats.reading_ease})`,
  ].join('\n');
}

export default defineAgent({
  description:
    'Plans a request into todos, analyses it with a subagent, drafts a brief (with the model when configured) and asks a person to approve it.',
  version: '1.0.0',
  prompts: {
    versions: {
      v1: 'You write short project briefs. Given a request and its todo list, answer with a one-paragraph brief followed by the numbered todos.',
      v2: 'You write project briefs for busy readers: one sentence of goal, then the todos as a numbered list with one risk each.',
    },
  },
  config: { temperature: 0.2 },
  input: z.object({
    query: z.string().min(1).describe('What the brief is about; commas, "and" and "then" split it into todos'),
    metadata: z.object({ auto_approve: z.boolean().default(false).describe('skip the human review') }).optional(),
  }),
  output: z.object({
    response: z.string().describe('the approved brief'),
    output: z.object({
      brief: z.string(),
      todos: z.array(z.object({ content: z.string(), status: z.enum(['pending', 'in_progress', 'completed']) })),
      approval: z.string(),
      reviewer: z.string().nullable(),
    }),
  }),
  graph: {
    nodes: {
      plan: {
        type: 'planner',
        description: 'Split the request into todos (write_todos)',
        run: (state, ctx) => {
          const request = requestOf(state);
          const todos = splitTodos(request);
          ctx.plan('write_todos', { todos });
          return { request, todos, response: `Planned ${todos.length} todo(s).` };
        },
      },
      analyze: {
        type: 'subagent',
        description: 'Word statistics of the request (the word-stats agent)',
        agent: 'word-stats',
        query: (state) => String(state.request ?? ''),
      },
      draft: {
        type: 'llm',
        description: 'Write the brief (the model when configured, else a template)',
        run: async (state, ctx) => {
          const stats = statsOf(state);
          if (!stats || stats.words === 0) {
            throw new Error(`cannot draft a brief: word-stats found no words in the request "${String(state.request ?? '')}"`);
          }
          const todos = todosOf(state).map((todo): Todo => ({ ...todo, status: 'in_progress' }));
          ctx.plan('write_todos', { todos });
          let brief: string;
          if (ctx.model.configured) {
            brief = await ctx.model.chat([
              { role: 'system', content: ctx.prompt },
              {
                role: 'user',
                content: `Request: ${String(state.request)}\nTodos:\n${todos.map((t, i) => `${i + 1}. ${t.content}`).join('\n')}`,
              },
            ]);
          } else {
            brief = composeBrief(String(state.request), todos, stats);
          }
          return { brief, todos, response: brief, drafted_by: ctx.model.configured ? ctx.model.name : 'template' };
        },
      },
      review: {
        type: 'approval',
        description: 'A person approves the brief',
        message: (state) => `Approve this brief?\n${String(state.brief)}`,
      },
      finalize: {
        description: 'Complete the todos and answer',
        run: (state, ctx) => {
          const todos = todosOf(state).map((todo): Todo => ({ ...todo, status: 'completed' }));
          ctx.plan('write_todos', { todos });
          const reviewer = typeof state.metadata.reviewer === 'string' ? state.metadata.reviewer : null;
          const approval = reviewer ? `approved by ${reviewer}` : state.metadata.hitl_approved ? 'approved' : 'auto-approved';
          const brief = String(state.brief);
          return { todos, response: `${brief}\n\n(${approval})`, output: { brief, todos, approval, reviewer } };
        },
      },
    },
    edges: [
      { from: 'plan', to: 'analyze' },
      { from: 'analyze', to: 'draft' },
      { from: 'draft', to: 'finalize', when: (s) => s.metadata.auto_approve === true, label: 'metadata.auto_approve' },
      { from: 'draft', to: 'review', label: 'needs review' },
      { from: 'review', to: 'finalize' },
      { from: 'finalize', to: END },
    ],
    entry: 'plan',
  },
});
