/**
 * What an endpoint shows of itself — in the list, on `/info` and in OpenAPI — and where it lives:
 * its route, its input and output models as JSON Schema, the names (never the values) of the
 * variables it needs, and its upstreams with every credential left out and URL secrets masked.
 */
import { z } from 'zod';
import { referencedVariables } from './interpolation.js';
import type { EndpointConfig, UpstreamDefinition } from './schemas.js';

export const ENDPOINTS_PREFIX = '/api/v1/endpoints';

/** What an endpoint is, as the list and `/info` both show it. */
export function describeEndpoint(config: EndpointConfig) {
  return {
    name: config.name,
    description: config.description,
    version: config.version,
    path: config.path,
    methods: config.methods,
    aggregation: config.aggregation,
    custom_handler: config.handler !== undefined,
  };
}

/**
 * Metadata for `/info`: what the endpoint is, its routes, its upstreams without any credential
 * (not even the template), the names of the environment variables it needs, and its schemas.
 */
export function endpointInfo(config: EndpointConfig): Record<string, unknown> {
  return {
    ...describeEndpoint(config),
    routes: {
      main: routePath(config),
      health: `${ENDPOINTS_PREFIX}/${config.name}/health`,
      info: `${ENDPOINTS_PREFIX}/${config.name}/info`,
    },
    env: requiredVariables(config),
    upstreams: config.upstreams.map(describeUpstream),
    input_schema: jsonSchemaOf(config.request, 'input'),
    output_schema: jsonSchemaOf(outputModelOf(config), 'output'),
  };
}

/**
 * The model of `aggregated`: `output` when given; otherwise, for the default handler, derived
 * from `response` (ALL → one field per upstream; FIRST_SUCCESS/MAJORITY → `response`), and
 * anything for a custom handler.
 */
export function outputModelOf(config: EndpointConfig): z.ZodType {
  if (config.output) return config.output;
  if (config.handler) return z.unknown();
  const one = config.response ?? z.unknown();
  if (config.aggregation === 'ALL') return z.object(Object.fromEntries(config.upstreams.map((u) => [u.name, one])));
  return one;
}

/** The route's response body: the fan-out envelope around the output model. */
export function envelopeModelOf(config: EndpointConfig): z.ZodType {
  return z.object({
    success: z.boolean(),
    aggregated: outputModelOf(config).nullable(),
    upstreams: z.array(UpstreamResultModel),
  });
}

/** Published in OpenAPI and /info; mirrors `UpstreamResult`. */
export const UpstreamResultModel = z.object({
  name: z.string(),
  ok: z.boolean(),
  outcome: z.enum(['success', 'http_error', 'timeout', 'network_error', 'invalid_response', 'config_error', 'cancelled']),
  status: z.number().int().nullable(),
  duration_ms: z.number(),
  attempts: z.number().int(),
  error: z.string().nullable(),
});

export function routePath(config: EndpointConfig): string {
  return `${ENDPOINTS_PREFIX}/${config.name}${config.path === '/' ? '' : config.path}`;
}

function jsonSchemaOf(model: z.ZodType | undefined, io: 'input' | 'output'): unknown {
  if (!model) return {};
  try {
    const schema = z.toJSONSchema(model, { io, unrepresentable: 'any' }) as Record<string, unknown>;
    delete schema.$schema;
    return schema;
  } catch {
    return {};
  }
}

/** Names (never values) of every `${NAME}` the endpoint's upstreams use. */
export function requiredVariables(config: EndpointConfig): string[] {
  const names = new Set<string>();
  const visit = (value: unknown) => {
    if (typeof value === 'string') referencedVariables(value).forEach((n) => names.add(n));
  };
  for (const u of config.upstreams) {
    // Only the template fields: a zod model in `response` is no place to look (and may be cyclic).
    [u.base_url, u.path, u.health_path, ...Object.values(u.headers)].forEach(visit);
    if (u.auth) Object.values(u.auth).forEach(visit);
  }
  return [...names].sort();
}

/**
 * An upstream as /info shows it. Credentials are left out entirely; URL templates are shown as
 * written (the values of `${NAME}` are not known here) with any inline userinfo or query value
 * masked, since a literal key in a URL is as secret as one in `auth`.
 */
function describeUpstream(u: UpstreamDefinition): Record<string, unknown> {
  const auth = u.auth;
  let authInfo: Record<string, unknown> | null = null;
  if (auth) {
    switch (auth.type) {
      case 'API_KEY':
        authInfo = { type: auth.type, header_name: auth.header_name, header_prefix: auth.header_prefix };
        break;
      case 'BEARER':
      case 'BASIC':
        authInfo = { type: auth.type };
        break;
      case 'OAUTH2_CLIENT_CREDENTIALS':
        authInfo = {
          type: auth.type,
          token_url: maskUrl(auth.token_url),
          scope: auth.scope ?? null,
          audience: auth.audience ?? null,
          token_leeway_ms: auth.token_leeway,
          client_auth: auth.client_auth,
        };
        break;
    }
  }
  return {
    name: u.name,
    base_url: maskUrl(u.base_url),
    path: maskUrl(u.path),
    method: u.method ?? null,
    weight: u.weight,
    timeout_ms: u.timeout_ms,
    retries: u.retries,
    retry_backoff_ms: u.retry_backoff_ms,
    retry_max_backoff_ms: u.retry_max_backoff_ms,
    retry_non_idempotent: u.retry_non_idempotent,
    header_names: Object.keys(u.headers),
    health_path: u.health_path ?? null,
    auth: authInfo,
  };
}

/** `https://user:pw@h/p?key=abc&v=${V}` → `https://***@h/p?key=***&v=${V}`. */
export function maskUrl(template: string): string {
  return template
    .replace(/\/\/[^/@]+@/, '//***@')
    .replace(/([?&][^=&#]+=)([^&#]*)/g, (_, key: string, value: string) =>
      /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value) ? key + value : `${key}***`,
    );
}
