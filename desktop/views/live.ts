/// <reference lib="dom" />
import { apiToken } from './api.js';

/**
 * The live channel (/api/v1/events) with reconnection: after a drop it retries with exponential
 * back-off (0.5 s doubling to 10 s, with jitter so many tabs do not reconnect in lockstep), and
 * resets the delay once a connection delivered a message. Every message is a whole workspace
 * snapshot, so nothing needs replaying after a reconnect.
 */
export type LiveState = 'connecting' | 'live' | 'offline';

export interface LiveOptions<T> {
  onMessage(message: T): void;
  onState(state: LiveState): void;
  path?: string;
}

export function connectLive<T>({ onMessage, onState, path = '/api/v1/events' }: LiveOptions<T>): () => void {
  let socket: WebSocket | undefined;
  let delay = 500;
  let timer: number | undefined;
  let stopped = false;

  const open = async () => {
    onState('connecting');
    const url = new URL(path, location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    // Browsers cannot set headers on a websocket, so the token travels as ?token= (server checks it).
    const token = await apiToken();
    if (token) url.searchParams.set('token', token);
    if (stopped) return;
    socket = new WebSocket(url);
    socket.onmessage = (event) => {
      delay = 500;
      onState('live');
      onMessage(JSON.parse(String(event.data)) as T);
    };
    socket.onclose = () => {
      socket = undefined;
      if (stopped) return;
      onState('offline');
      const wait = delay * (0.75 + Math.random() * 0.5);
      delay = Math.min(delay * 2, 10_000);
      timer = window.setTimeout(() => void open(), wait);
    };
  };
  void open();
  return () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    socket?.close();
  };
}
