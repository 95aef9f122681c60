/**
 * The journal of one node execution: the model's answers and the finished tool calls, in the order
 * they happened. Each finished tool call writes it into a checkpoint (source `tool`), and an
 * interrupt's checkpoint carries it, so a node re-run from such a checkpoint — a resume after an
 * approval, a studio resume after a failure or a restart — replays the recorded answers and
 * results instead of asking the model again and running a finished call a second time.
 *
 * Replay is by position for model calls (the n-th call of the node gets the n-th recorded answer)
 * and by call id for tool results, since a step's calls finish in any order. The accepted edge: a
 * node whose code asks the model different things on the re-run still gets the recorded answers
 * in order — as a workflow engine's replay, it assumes the node's code is the same code.
 */
import type { ModelTurn } from './model.js';
import type { ToolCallResult } from './tool-loop.js';

export interface ToolJournal {
  /** The node the journal belongs to; only a re-run of that node replays it. */
  node: string;
  turns: ModelTurn[];
  results: Record<string, ToolCallResult>;
}

export class NodeJournal {
  private cursor = 0;
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly record: ToolJournal,
    /** Writes a copy of the journal into a checkpoint. */
    private readonly write: (journal: ToolJournal) => unknown,
  ) {}

  /** The recorded answer of the next model call, when this node got that far before. */
  replayTurn(): ModelTurn | undefined {
    const turn = this.record.turns[this.cursor];
    if (turn) this.cursor++;
    return turn;
  }

  recordTurn(turn: ModelTurn): void {
    this.record.turns.push(turn);
    this.cursor = this.record.turns.length;
  }

  replayResult(callId: string): ToolCallResult | undefined {
    return this.record.results[callId];
  }

  /** Record a finished call and checkpoint it; writes happen one at a time, in finishing order. */
  recordResult(result: ToolCallResult): Promise<unknown> {
    this.record.results[result.id] = result;
    const copy = this.snapshot();
    this.writing = this.writing.then(() => this.write(copy));
    return this.writing;
  }

  /** Resolves when every checkpoint write asked for so far is done. */
  settled(): Promise<unknown> {
    return this.writing;
  }

  /** True once a tool call finished in this node: only then is there anything a re-run must not repeat. */
  get hasResults(): boolean {
    return Object.keys(this.record.results).length > 0;
  }

  snapshot(): ToolJournal {
    return { node: this.record.node, turns: [...this.record.turns], results: { ...this.record.results } };
  }
}
