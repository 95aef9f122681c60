import http from 'node:http';

/**
 * A request sent exactly as written: fetch (WHATWG URL) would resolve `/./`, `..` and `%2e`
 * before sending, which is the very thing these tests must get past the client.
 */
export function rawRequest(
  port: number,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string; body: any }> {
  return new Promise((resolve, reject) => {
    // A body always goes with its length (node would send a GET's body unframed).
    const length = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
    const req = http.request(
      { host: '127.0.0.1', port, method, path: target, headers: { connection: 'close', ...length, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          if ((res.headers['content-type'] ?? '').includes('json') && text) {
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = text;
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Spellings of `path` that a server must treat as `path` itself: percent-encoded letters (lower- and
 * upper-case hex), doubled slashes, `.` and `..` segments (plain and encoded), a trailing slash.
 */
export function encodedVariants(path: string): string[] {
  const segments = path.split('/').filter(Boolean);
  const encodeFirst = (segment: string, upper: boolean) => {
    const hex = segment.charCodeAt(0).toString(16);
    return `%${upper ? hex.toUpperCase() : hex}${segment.slice(1)}`;
  };
  const join = (parts: string[]) => `/${parts.join('/')}`;
  const variants = new Set<string>();
  segments.forEach((_, i) => {
    variants.add(join(segments.map((s, j) => (j === i ? encodeFirst(s, false) : s))));
    variants.add(join(segments.map((s, j) => (j === i ? encodeFirst(s, true) : s))));
  });
  variants.add(join(segments.map((s) => [...s].map((c) => `%${c.charCodeAt(0).toString(16)}`).join(''))));
  variants.add(`/${segments.join('//')}`);
  variants.add(`//${segments.join('/')}`);
  variants.add(`/${segments[0]}/./${segments.slice(1).join('/')}`);
  variants.add(`/${segments[0]}/%2e/${segments.slice(1).join('/')}`);
  variants.add(`/${segments[0]}/x/../${segments.slice(1).join('/')}`);
  variants.add(`/${segments[0]}/x/%2E%2e/${segments.slice(1).join('/')}`);
  variants.add(`${path}/`);
  variants.add(`${path}//`);
  return [...variants].filter((v) => v !== path);
}
