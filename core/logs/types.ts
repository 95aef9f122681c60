/**
 * The invocation recorder other subsystems call: one `record` per call to an agent, endpoint,
 * plugin, pipeline or ingestor (and per control action). It never throws and never makes the
 * caller wait: the log writes behind the call. The logs subsystem provides it as the `invocations`
 * service (core/kernel/services.ts); when history is off, `record` does nothing.
 *
 * @example
 * const started = Date.now();
 * … do the work …
 * ctx.services.find('invocations')?.record({ resource: 'plugin', name, operation: 'predict', principal, started,
 *   ok: true, http_status: 200, input, output });
 */
export const INVOKED_RESOURCES = ['agent', 'endpoint', 'plugin', 'pipeline', 'ingestor', 'control'] as const;
export type InvokedResource = (typeof INVOKED_RESOURCES)[number];

export interface InvocationEntry {
  resource: InvokedResource;
  name: string;
  /** What was called: 'invoke', 'chat', 'predict', 'batch', 'run', 'drain', … */
  operation: string;
  principal: string;
  /** Epoch milliseconds when the call started. */
  started: number;
  /** Defaults to now − started. */
  duration_ms?: number;
  ok: boolean;
  http_status?: number;
  input?: unknown;
  output?: unknown;
  error?: string | null;
  /** The task that ran it, for async work. */
  task_id?: string;
  /** Model tokens the call spent (an agent run that called a model). */
  usage?: TokenTotals | null;
}

/** A run's token counts as its response's `metadata.usage` sums them. */
export interface TokenTotals {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** The run's cost when the settings hold a price table (`model.prices`); null when a call could not be priced. */
  cost?: number | null;
  currency?: string;
}

export interface InvocationRecorder {
  readonly enabled: boolean;
  record(entry: InvocationEntry): void;
}

/** What callers get when the logs subsystem is not wired at all. */
export const noRecorder: InvocationRecorder = { enabled: false, record: () => {} };
