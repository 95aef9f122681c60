/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { z } from 'zod';
import type { LineageResponse, Message, Thread } from '../../../core/threads/schemas.js';
import { getJson, postJson } from '../api.js';
import { describeError } from './errors.js';

/**
 * The agent's conversation threads (/api/v1/{agent}/threads and /chat): the list, a thread's
 * messages, chatting on with the thread's history, forking at any message into a new thread, and
 * the lineage (ancestors and forks) of the one shown. These are the persisted chat threads; the run
 * panel's threads are the checkpointed run threads of the debug routes.
 *
 * Every thread of the agent is listed, whoever created it (the studio, `curl`, a script through the
 * SDK). Threads made elsewhere raise no event the UI hears, so the list is asked again every
 * `POLL_MS` while the tab is visible and whenever the window gets focus, as Jupyter's file browser
 * polls its folder.
 */
const POLL_MS = 5000;

type Lineage = z.output<typeof LineageResponse>;

export function Conversations({ agent }: { agent: string }) {
  const base = `/api/v1/${encodeURIComponent(agent)}`;
  const [threads, setThreads] = useState<Thread[]>([]);
  const [selected, setSelected] = useState<string | null>(null);
  const [messages, setMessages] = useState<Message[]>([]);
  const [lineage, setLineage] = useState<Lineage | null>(null);
  const [input, setInput] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);

  useEffect(() => {
    const again = () => document.visibilityState === 'visible' && setRefresh((n) => n + 1);
    const timer = setInterval(again, POLL_MS);
    window.addEventListener('focus', again);
    return () => {
      clearInterval(timer);
      window.removeEventListener('focus', again);
    };
  }, []);
  useEffect(() => {
    getJson<{ threads: Thread[] }>(`${base}/threads`).then(
      (r) => setThreads(r.threads),
      (err: unknown) => setError(describeError(err)),
    );
  }, [base, refresh]);
  useEffect(() => {
    if (!selected) {
      setMessages([]);
      setLineage(null);
      return;
    }
    const thread = `${base}/threads/${encodeURIComponent(selected)}`;
    getJson<{ messages: Message[] }>(`${thread}/messages?limit=500`).then(
      (r) => setMessages(r.messages),
      (err: unknown) => setError(describeError(err)),
    );
    getJson<Lineage>(`${thread}/lineage`).then(setLineage, () => setLineage(null));
  }, [base, selected, refresh]);

  const send = async (e: Event) => {
    e.preventDefault();
    const content = input.trim();
    if (!content || busy) return;
    setBusy(true);
    try {
      const answer = await postJson<{ thread_id: string }>(`${base}/chat`, { content, thread_id: selected });
      setInput('');
      setSelected(answer.thread_id);
      setError(null);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
      setRefresh((n) => n + 1);
    }
  };

  const fork = async (index: number) => {
    try {
      const created = await postJson<Thread>(`${base}/threads/${encodeURIComponent(selected!)}/fork`, { message_index: index });
      setSelected(created.id);
      setRefresh((n) => n + 1);
    } catch (err) {
      setError(describeError(err));
    }
  };

  const label = (t: { id: string; title: string | null }) => t.title || t.id.slice(0, 8);
  return html`<section class="card conversations" aria-labelledby="conv-title" data-testid="conversations">
    <h2 id="conv-title">Conversations</h2>
    <div class="conv-grid">
      <ul class="plain conv-list" aria-label="Threads">
        <li><button class=${selected === null ? 'selected' : ''} aria-pressed=${selected === null} onClick=${() => setSelected(null)}>+ New conversation</button></li>
        ${threads.map(
          (t) => html`<li>
            <button class=${selected === t.id ? 'selected' : ''} aria-pressed=${selected === t.id} onClick=${() => setSelected(t.id)}>
              ${label(t)} ${t.parent_thread_id && html`<small class="branch">fork</small>`}
            </button>
          </li>`,
        )}
      </ul>
      <div>
        ${
          lineage &&
          (lineage.ancestors.length > 0 || lineage.descendants.length > 0) &&
          html`<p class="lineage" data-testid="lineage">
          Lineage: ${[...lineage.ancestors].reverse().map((a) => html`<button class="link" onClick=${() => setSelected(a.id)}>${label(a)}</button> › `)}
          <strong>this</strong>
          ${lineage.descendants.length > 0 && html` › forks: ${lineage.descendants.map((d) => html`<button class="link" onClick=${() => setSelected(d.id)}>${label(d)}</button> `)}`}
        </p>`
        }
        <ol class="transcript" aria-label="Messages" data-testid="messages">
          ${messages.map(
            (m, i) => html`<li class=${`turn ${m.role === 'user' ? 'user' : 'assistant'}`}>
              <span class="who">${m.role}</span>
              <div class="text">${m.content}</div>
              <button class="small" aria-label=${`Fork from message ${i + 1}`} onClick=${() => fork(i)}>Fork from here</button>
            </li>`,
          )}
        </ol>
        <form class="composer" onSubmit=${send}>
          <label for="conv-input">${selected ? 'Continue this conversation' : 'Start a conversation'}</label>
          <textarea id="conv-input" rows="2" value=${input} onInput=${(e: Event) => setInput((e.target as HTMLTextAreaElement).value)}></textarea>
          <button class="primary" type="submit" disabled=${busy || !input.trim()}>Chat</button>
        </form>
        ${error && html`<p class="alert" role="alert">${error}</p>`}
      </div>
    </div>
  </section>`;
}
