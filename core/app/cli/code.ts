/**
 * `hangar code …`: the coding-run harness from a terminal. Every command is a client of the HTTP
 * API: it attaches to the Hangar running on its workspace (found through its runtime file,
 * core/app/cli/attach.ts), or to `--url` (token from `--session` or the workspace's
 * .hangar/code-session.json); only when none runs does it start a headless server in-process for
 * the command, and says so on stderr. Progress (waves, gates, tickets) is printed from the run's
 * SSE stream as it happens.
 *
 * Exit codes (core/app/cli/convention.ts): 0 done (a run succeeded), 1 a run failed or was
 * cancelled or the server could not be reached, 2 usage or settings error.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createParser } from 'eventsource-parser';
import type { RunEvent, RunRecord } from '../../coderun/schemas.js';
import { SESSION_FILE } from '../../coderun/session.js';
import { type Attached, attachOrStart } from './attach.js';
import type { CliIO } from './convention.js';
import { CommandError, report, UsageError } from './convention.js';

export const CODE_HELP = `Usage:
  hangar code run "<request>" [--repo DIR] [--teams a,b] [--approve]   plan and run; prints waves, gates, tickets
  hangar code teams [--repo DIR]                                         list teams (shipped and project)
  hangar code preselect "<request>" [--repo DIR] [--teams a,b]           which teams a request selects and why
  hangar code calibrate                                                  measure the model endpoint

Options:
  --root DIR      workspace (default: current folder); settings from DIR/hangar.config.json
  --config FILE   settings file
  --url URL       the server (default: the Hangar running on the workspace; when none runs, one
                  is started in this process for the command)
  --session TOK   its session token (default: from the server's runtime file, else
                  <root>/.hangar/${SESSION_FILE})
  --approve       stop at the plan-approval gate and approve after printing the plan
  -h, --help

The model endpoint comes from settings: model.baseUrl / HANGAR_MODEL__BASE_URL, e.g. for Ollama
  HANGAR_MODEL__BASE_URL=http://127.0.0.1:11434/v1 HANGAR_MODEL__MODEL=qwen2.5-coder:7b hangar code run "..."`;

const defaultIO: CliIO = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

interface Client {
  // biome-ignore lint/suspicious/noExplicitAny: each command reads the fields of its own answer
  call(method: string, pathname: string, body?: unknown): Promise<any>;
  events(runId: string, onEvent: (e: RunEvent) => void): Promise<void>;
  close(): Promise<void>;
}

class ApiError extends Error {}

function client(url: string, token: string, attached?: Attached): Client {
  const headers: Record<string, string> = { 'x-hangar-session': token, 'content-type': 'application/json' };
  if (attached?.bearer) headers.authorization = `Bearer ${attached.bearer}`;
  const reach = async (pathname: string, init: RequestInit) => {
    try {
      return await fetch(url + pathname, init);
    } catch (err) {
      throw new CommandError(
        `no Hangar answers at ${url} (${(err as { cause?: Error }).cause?.message ?? (err as Error).message})`,
        'is it running? `hangar list` shows the running servers',
      );
    }
  };
  return {
    async call(method, pathname, body) {
      const res = await reach(pathname, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const json = (await res.json().catch(() => ({}))) as { detail?: unknown };
      if (!res.ok) throw new ApiError(`${res.status}: ${typeof json.detail === 'string' ? json.detail : JSON.stringify(json.detail)}`);
      return json;
    },
    async events(runId, onEvent) {
      const res = await reach(`/api/runs/${runId}/events`, { headers });
      if (!res.ok || !res.body) throw new ApiError(`events: ${res.status}`);
      const parser = createParser({
        onEvent: (message) => {
          if (message.data === '[DONE]') return;
          const data = JSON.parse(message.data) as RunEvent | { event: string };
          if ('type' in data) onEvent(data);
        },
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    },
    close: async () => attached?.close(),
  };
}

/** One line per event worth a terminal line; tool calls and board noise stay in the UI. */
export function formatEvent(e: RunEvent): string | undefined {
  switch (e.type) {
    case 'run_status':
      return `run ${e.status}${e.detail ? `: ${e.detail}` : ''}`;
    case 'plan_proposed': {
      const lines = [`plan: ${e.tasks} task(s)${e.summary ? ` — ${e.summary}` : ''}`];
      // Older servers send no cap report.
      if (e.dropped?.length) {
        lines.push(
          `  plan size cap ${e.cap}: dropped ${e.dropped.map((t) => `${t.id}${t.team ? ` [${t.team}]` : ''} ${t.title}`).join('; ')}`,
        );
        if (e.teams_without_work.length) lines.push(`  teams left without work: ${e.teams_without_work.join(', ')}`);
      }
      for (const problem of e.problems ?? []) lines.push(`  plan problem: ${problem}`);
      return lines.join('\n');
    }
    case 'plan_edited':
      return 'plan edited';
    case 'contract_frozen':
      return `contract frozen: ${e.name} (provider ${e.provider} → ${e.consumers.join(', ') || 'no consumers'})`;
    case 'dependency_dropped':
      return `dependency dropped: ${e.task} no longer waits for ${e.dependency} (${e.reason})`;
    case 'wave':
      return `wave ${e.wave}: ${e.tasks.join(', ')} [teams ${e.teams.join(', ')}]`;
    case 'task_update':
      return e.state === 'done' || e.state === 'to_scope' || e.note ? `  ${e.task} → ${e.state}${e.note ? ` (${e.note})` : ''}` : undefined;
    case 'review_pending':
      return `  ${e.task} in review by ${e.reviewer}`;
    case 'tool':
      return e.ok ? undefined : `  ${e.task}: ${e.detail}`;
    case 'fence_violation':
      return `  ${e.task}: fence violation — ${e.command ? `\`${e.command}\`` : 'a command'} wrote ${e.file}, owned by team '${e.owner}'; reverted`;
    case 'gate':
      return `gate ${e.team}: ${e.outcome} — ${e.reason} (\`${e.command}\`)`;
    case 'ticket':
      return `ticket ${e.ticket} ${e.action} (team ${e.team}, seen ${e.count}x)`;
    case 'integration':
      return `integration: ${e.outcome} — ${e.reason}`;
    case 'run_finished':
      return `run ${e.status}: ${e.summary}`;
    default: {
      const never: never = e;
      return String(never);
    }
  }
}

export async function codeCli(argv: string[], io: CliIO = defaultIO): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        repo: { type: 'string' },
        teams: { type: 'string' },
        root: { type: 'string' },
        config: { type: 'string' },
        url: { type: 'string' },
        session: { type: 'string' },
        approve: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    return report(io, err, 'hangar code --help');
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help) {
    io.out(CODE_HELP);
    return 0;
  }
  if (!command)
    return report(io, new UsageError('hangar code needs a command: run, teams, preselect or calibrate', 'see hangar code --help'));
  if (!['run', 'teams', 'preselect', 'calibrate'].includes(command)) {
    return report(
      io,
      new UsageError(
        `unknown command 'hangar code ${command}'`,
        'the commands are run, teams, preselect and calibrate; see hangar code --help',
      ),
    );
  }
  if (command === 'run' && !rest.join(' ').trim()) {
    return report(
      io,
      new UsageError('hangar code run needs the request', 'e.g. hangar code run "add a /health route with a test" --repo .'),
    );
  }
  const root = path.resolve(values.root ?? process.cwd());
  let api: Client;
  try {
    if (values.url) {
      let token = values.session;
      if (!token) {
        const file = path.join(root, '.hangar', SESSION_FILE);
        try {
          token = (JSON.parse(readFileSync(file, 'utf8')) as { token: string }).token;
        } catch {
          throw new UsageError(
            `--url needs the server's session token and ${file} cannot be read`,
            'pass --session TOKEN, or --root the workspace that server serves',
          );
        }
      }
      api = client(values.url.replace(/\/$/, ''), token);
    } else {
      const trustRepo = values.repo ? path.resolve(values.repo) : undefined;
      const attached = await attachOrStart({ root, configFile: values.config, command: 'hangar code', io, trustRepo });
      api = client(attached.url, values.session ?? attached.session, attached);
    }
  } catch (err) {
    return report(io, err, 'hangar code --help');
  }
  const repo = values.repo ? path.resolve(values.repo) : undefined;
  const teams = values.teams
    ?.split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const repoQuery = repo ? `?repo=${encodeURIComponent(repo)}` : '';
  try {
    switch (command) {
      case 'teams': {
        const list = await api.call('GET', `/api/teams${repoQuery}`);
        for (const t of list.teams)
          io.out(
            `${t.id.padEnd(16)} ${t.source.padEnd(8)} owns ${t.owns.join(', ')}  acceptance: ${t.acceptance || '(none)'}  manager: ${t.effective_manager}`,
          );
        if (!list.teams.length) io.out('no teams (add teams/<id>.json or <repo>/.hangar/teams/<id>.json)');
        return 0;
      }
      case 'preselect': {
        const report = await api.call('POST', '/api/teams/preselect', { request: rest.join(' '), repo, teams });
        io.out(`mode ${report.mode}: ${report.note}`);
        for (const t of report.teams) io.out(`  ${t.id} (manager ${t.manager}): ${t.reasons.join('; ')}`);
        return 0;
      }
      case 'calibrate': {
        const c = await api.call('GET', '/api/calibration');
        io.out(`model ${c.model} at ${c.base_url}`);
        io.out(
          `latency ${c.latency_ms} ms, throughput ${c.throughput_tokens_per_s ?? '?'} tok/s, useful parallelism ${c.useful_parallelism}`,
        );
        io.out(`context window ${c.context_window ?? 'unknown'} (${c.context_window_source})`);
        return 0;
      }
      case 'run': {
        const request = rest.join(' ').trim();
        const run = (await api.call('POST', '/api/runs', { request, repo, teams, require_approval: values.approve ?? false })) as RunRecord;
        io.out(`run ${run.id} on ${run.repo} with teams ${run.teams.map((t) => t.id).join(', ')}`);
        const onSigint = () => {
          io.err('cancelling…');
          api.call('POST', `/api/runs/${run.id}/cancel`).catch(() => undefined);
        };
        process.once('SIGINT', onSigint);
        try {
          await api.events(run.id, (e) => {
            const line = formatEvent(e);
            if (line) io.out(line);
            if (e.type === 'run_status' && e.status === 'awaiting_approval') {
              api
                .call('GET', `/api/runs/${run.id}/plan`)
                .then((card) => {
                  for (const t of card.tasks)
                    io.out(`  ${t.id} [${t.squad ?? 'no team'}] ${t.title} — files ${t.files.join(', ') || '(none)'}`);
                  if (card.note) io.out(`  (${card.note})`);
                  return api.call('POST', `/api/runs/${run.id}/approve`);
                })
                .catch((err: unknown) => {
                  // Nobody else will approve this run: stop it rather than wait at the gate forever.
                  io.err(
                    `hangar: approval failed: ${(err as Error).message} (the run is cancelled; approve it in the Runs view next time)`,
                  );
                  return api.call('POST', `/api/runs/${run.id}/cancel`).catch(() => undefined);
                });
            }
          });
        } finally {
          process.off('SIGINT', onSigint);
        }
        const final = (await api.call('GET', `/api/runs/${run.id}`)) as RunRecord;
        io.out(
          `branch ${final.branch ?? '(none)'}; repairs found ${final.repairs.found}, resolved ${final.repairs.resolved}, restaffed ${final.repairs.restaffed}, needs_human ${final.repairs.needs_human}`,
        );
        return final.status === 'succeeded' ? 0 : 1;
      }
    }
    return 2;
  } catch (err) {
    if (err instanceof ApiError) return report(io, new CommandError(`the server answered hangar code ${command} with ${err.message}`));
    return report(io, err, 'hangar code --help');
  } finally {
    await api.close();
  }
}
