import type { z } from 'zod';
import type { PlatformStatus } from './schemas.js';

/** The /status dashboard: plain server-rendered HTML, no scripts, refreshes itself every 5 s. */

const escapeHtml = (value: unknown) =>
  String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function formatUptime(seconds: number): string {
  const s = Math.floor(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${m}m` : m ? `${m}m ${s % 60}s` : `${s}s`;
}

export function renderStatusPage(status: z.infer<typeof PlatformStatus>): string {
  const agentRows = status.agents
    .map(
      (a) =>
        `<tr><td><a href="/api/v1/${escapeHtml(a.name)}/card">${escapeHtml(a.name)}</a></td><td>${escapeHtml(a.version)}</td>` +
        `<td class="${escapeHtml(a.status)}">${escapeHtml(a.status)}</td><td><code>${escapeHtml(a.file)}</code></td><td>${escapeHtml(a.loads)}</td></tr>`,
    )
    .join('');
  const errorRows = status.errors
    .map(
      (e) =>
        `<tr><td>${escapeHtml(e.kind)}</td><td><code>${escapeHtml(e.file)}${e.line ? `:${e.line}` : ''}${e.column ? `:${e.column}` : ''}</code></td>` +
        `<td><pre>${escapeHtml(e.message)}</pre></td></tr>`,
    )
    .join('');
  const byStatus = Object.entries(status.requests.by_status)
    .sort()
    .map(([code, n]) => `${escapeHtml(code)}: ${n}`)
    .join(', ');
  const dropins = Object.entries(status.dropins)
    .map(([kind, n]) => `${escapeHtml(kind)}: ${n}`)
    .join(', ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
<title>${escapeHtml(status.platform)} status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border-bottom:1px solid #ddd;padding:.3rem .8rem;text-align:left}
.healthy{color:#17803d}.degraded,.starting{color:#b45309}pre{margin:0;white-space:pre-wrap;color:#b91c1c}
.summary span{margin-right:1.5rem}
</style></head><body>
<h1>${escapeHtml(status.platform)} <small>${escapeHtml(status.version)}</small></h1>
<p class="summary"><span>Status: <b class="${escapeHtml(status.status)}">${escapeHtml(status.status)}</b></span>
<span>Uptime: ${formatUptime(status.uptime_seconds)}</span><span>Requests: ${status.requests.total}${byStatus ? ` (${byStatus})` : ''}</span>
<span>Drop-ins: ${dropins || 'none'}</span></p>
<p>Workspace: <code>${escapeHtml(status.workspace)}</code></p>
<h2>Agents (${status.agents.length})</h2>
<table><tr><th>Name</th><th>Version</th><th>Status</th><th>File</th><th>Loads</th></tr>${agentRows || '<tr><td colspan="5">No agents found in agents/</td></tr>'}</table>
<h2>Drop-in errors (${status.errors.length})</h2>
<table><tr><th>Kind</th><th>Where</th><th>Error</th></tr>${errorRows || '<tr><td colspan="3">None</td></tr>'}</table>
<p><a href="/docs">API docs</a> · <a href="/api/v1/status">JSON</a> · <a href="/metrics">metrics</a></p>
</body></html>`;
}
