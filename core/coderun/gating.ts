/**
 * The gates of a run: each team's acceptance command once its lane has finished (and again after a
 * fix settled), a correction ticket with a fix task for a RED gate, and the integration check over
 * every team's work at the end. Bounded: a lane is gated at most `MAX_GATE_RUNS` times and a ticket
 * is staffed at most `MAX_TICKET_STAFFING` times; past that it goes to a person.
 */
import { implicatedFiles, newTask, raiseDefect } from './board.js';
import { runGate } from './gates.js';
import { finalGates } from './report.js';
import type { CodeConfig, GateResult, RunEvent, RunRecord, RunTask, Ticket } from './schemas.js';
import type { Team } from './team-schema.js';

/** Gate runs per team: first run plus re-runs after fixes (bounds a lane that keeps finding new defects). */
const MAX_GATE_RUNS = 3;
/** Each ticket is staffed once and re-staffed at most once. */
const MAX_TICKET_STAFFING = 2;

/** What gating needs of its run. */
export interface GatedRun {
  readonly record: RunRecord;
  readonly config: CodeConfig;
  readonly signal: AbortSignal;
  /** The run's worktree, where gates run. */
  dir(): string;
  /** Change the record (and persist it). */
  update(patch: Partial<RunRecord>): void;
  emit(event: RunEvent): void;
  throwIfCancelled(): void;
}

export class RunGating {
  private readonly gateRuns = new Map<string, number>();
  /** Fix tasks whose result a gate has already judged. */
  private readonly gatedFixes = new Set<string>();

  constructor(private readonly host: GatedRun) {}

  /**
   * Gate every team whose lane has finished and is not yet proved; raise or bump tickets for RED
   * gates and queue their fix tasks. Returns true when new work was queued (waves run again).
   */
  async gateFinishedLanes(): Promise<boolean> {
    let queued = false;
    for (const team of this.host.record.teams) {
      const lane = this.host.record.tasks.filter((t) => t.squad === team.id);
      if (!lane.length || lane.some((t) => t.state !== 'done' && t.state !== 'to_scope')) continue;
      const last = [...this.host.record.gates].reverse().find((g) => g.team === team.id);
      const openTicket = this.host.record.tickets.find((t) => t.team === team.id && t.status !== 'resolved');
      // A lane is gated once when it finishes, and again only after a fix task settled since.
      if (last && !lane.some((t) => t.ticket && !this.gatedFixes.has(t.id))) continue;
      const runs = (this.gateRuns.get(team.id) ?? 0) + 1;
      if (runs > MAX_GATE_RUNS) continue;
      this.gateRuns.set(team.id, runs);
      const result = await runGate(team.id, team.acceptance, this.host.dir(), this.host.config.command_timeout_ms, this.host.signal);
      this.host.throwIfCancelled();
      lane.filter((t) => t.ticket).forEach((t) => this.gatedFixes.add(t.id));
      this.host.update({ gates: [...this.host.record.gates, result] });
      this.host.emit({
        type: 'gate',
        run: this.host.record.id,
        team: team.id,
        outcome: result.outcome,
        command: result.command,
        reason: result.reason,
      });
      if (result.outcome === 'RED') queued = this.ticketFor(team, result, lane) || queued;
      else if (openTicket && result.outcome === 'green') this.resolveTickets(team.id);
    }
    return queued;
  }

  /** The team's check passed: every ticket it raised is resolved (each defect was that check failing). */
  private resolveTickets(team: string): void {
    const resolving = this.host.record.tickets.filter((t) => t.team === team && t.status !== 'resolved');
    this.host.update({ tickets: this.host.record.tickets.map((t) => (resolving.includes(t) ? { ...t, status: 'resolved' as const } : t)) });
    for (const t of resolving)
      this.host.emit({ type: 'ticket', run: this.host.record.id, team, ticket: t.id, action: 'resolved', count: t.count });
  }

  /** Raise (or bump) the ticket of a RED gate and queue its fix task; false when no fix is allowed. */
  private ticketFor(team: Team, result: GateResult, lane: RunTask[]): boolean {
    const laneFiles = [...new Set(lane.flatMap((t) => [...t.files, ...t.changed]))];
    const { tickets, ticket, action } = raiseDefect(this.host.record.tickets, {
      team: team.id,
      command: result.command,
      output: result.output_tail,
      files: implicatedFiles(result.output_tail, laneFiles),
      fingerprint: result.fingerprint,
    });
    this.host.update({ tickets });
    this.host.emit({ type: 'ticket', run: this.host.record.id, team: team.id, ticket: ticket.id, action, count: ticket.count });
    // Other open tickets of this lane stay open: a defect that did not show this time may be
    // hidden behind the new one. A ticket is resolved only when its check passes.
    // A fix no gate will judge (the lane's gate runs are used up) would be reported as unproved
    // work: the ticket goes to a person instead.
    const gateLeft = (this.gateRuns.get(team.id) ?? 0) < MAX_GATE_RUNS;
    if (ticket.staffed >= MAX_TICKET_STAFFING || !gateLeft) {
      this.setTicket({ ...ticket, status: 'needs_human' });
      this.host.emit({
        type: 'ticket',
        run: this.host.record.id,
        team: team.id,
        ticket: ticket.id,
        action: 'needs_human',
        count: ticket.count,
      });
      return false;
    }
    const staffed = ticket.staffed + 1;
    this.setTicket({ ...ticket, staffed });
    const id = `${ticket.id}-FIX${staffed}`;
    const fix = newTask(
      {
        id,
        title: `Fix: \`${ticket.command}\` fails (${ticket.id})`,
        description: `The acceptance command of team '${team.id}' failed${ticket.count > 1 ? ` again (found ${ticket.count} times)` : ''}. Output tail:\n${ticket.output_tail}`,
        role: 'developer',
        squad: team.id,
        acceptance: ticket.acceptance,
        criteria: [{ text: ticket.acceptance, command: ticket.command }],
        priority: 0,
        files: ticket.files,
        dependencies: [],
      },
      ticket.id,
    );
    this.host.update({ tasks: [...this.host.record.tasks, fix] });
    this.host.emit({
      type: 'task_update',
      run: this.host.record.id,
      task: id,
      team: team.id,
      state: fix.state,
      note: `correction for ${ticket.id}`,
    });
    return true;
  }

  private setTicket(ticket: Ticket): void {
    this.host.update({ tickets: this.host.record.tickets.map((t) => (t.id === ticket.id ? ticket : t)) });
  }

  /** Integration check: skipped when any team's final gate is RED. */
  async integrate(): Promise<void> {
    const finals = finalGates(this.host.record);
    const red = finals.filter((g) => g.outcome === 'RED');
    if (red.length) {
      this.host.emit({
        type: 'integration',
        run: this.host.record.id,
        outcome: 'skipped',
        reason: `RED gate: ${red.map((g) => g.team).join(', ')}`,
      });
      return;
    }
    const commands = this.host.config.integration_command
      ? [this.host.config.integration_command]
      : [
          ...new Set(
            this.host.record.teams
              .filter((t) => this.host.record.tasks.some((x) => x.squad === t.id))
              .map((t) => t.acceptance)
              .filter(Boolean),
          ),
        ];
    if (!commands.length) {
      const result: GateResult = {
        team: '*',
        command: '',
        outcome: 'UNVERIFIED',
        exit_code: null,
        tests: null,
        reason: 'no integration command and no acceptance commands',
        output_tail: '',
        ms: 0,
      };
      this.host.update({ integration: result });
      this.host.emit({ type: 'integration', run: this.host.record.id, outcome: result.outcome, reason: result.reason });
      return;
    }
    const result = await runGate('*', commands.join(' && '), this.host.dir(), this.host.config.command_timeout_ms, this.host.signal);
    this.host.update({ integration: result });
    this.host.emit({ type: 'integration', run: this.host.record.id, outcome: result.outcome, reason: result.reason });
    if (result.outcome === 'RED') {
      // Every team's half passed alone but not together: no single lane owns the defect, so the
      // ticket goes to a person instead of being staffed.
      const files = [...new Set(this.host.record.tasks.flatMap((t) => t.changed))];
      const { tickets, ticket, action } = raiseDefect(this.host.record.tickets, {
        team: 'integration',
        command: result.command,
        output: result.output_tail,
        files: implicatedFiles(result.output_tail, files),
        fingerprint: result.fingerprint,
      });
      this.host.update({ tickets: tickets.map((t) => (t.id === ticket.id ? { ...t, status: 'needs_human' as const } : t)) });
      this.host.emit({ type: 'ticket', run: this.host.record.id, team: 'integration', ticket: ticket.id, action, count: ticket.count });
      this.host.emit({
        type: 'ticket',
        run: this.host.record.id,
        team: 'integration',
        ticket: ticket.id,
        action: 'needs_human',
        count: ticket.count,
      });
    }
  }
}
