import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { agentSource, startTestServer } from '../support/server.js';

/** One request over `agent`, answered with its status, its body and the socket it used. */
function post(url: string, agent: http.Agent): Promise<{ status: number; body: string; socket: import('node:net').Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body, socket: req.socket! }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ query: 'q' }));
  });
}

describe('stopping the server', () => {
  it('closes a keep-alive connection once its last response is sent, not at the end of the grace', async () => {
    const server = await startTestServer({
      files: { 'agents/slow.ts': agentSource(`{ run: async () => { await new Promise((r) => setTimeout(r, 400)); return 'done'; } }`) },
      settings: { watch: false },
      // Far longer than the test waits: a connection left open would hold the stop for all of it.
      start: { graceMs: 20_000 },
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // The connection is kept alive after a first answer.
      const first = await post(`${server.url}/api/v1/slow/invoke`, agent);
      expect(first.status).toBe(200);
      const answering = post(`${server.url}/api/v1/slow/invoke`, agent);
      // Stopped while the second call runs on the same connection.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const stopping = performance.now();
      const stopped = server.stop();
      const second = await answering;
      expect(second.status).toBe(200);
      expect(JSON.parse(second.body)).toMatchObject({ response: 'done' });
      expect(second.socket).toBe(first.socket);
      await new Promise<void>((resolve) => (second.socket.destroyed ? resolve() : second.socket.once('close', () => resolve())));
      await stopped;
      expect(performance.now() - stopping).toBeLessThan(5_000);
    } finally {
      agent.destroy();
    }
  }, 30_000);
});
