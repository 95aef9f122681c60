/**
 * Example: one route, two providers, ALL aggregation.
 *
 *   GET  /api/v1/endpoints/weather/current?city=Oslo&units=metric
 *   POST /api/v1/endpoints/weather/current   {"city": "Oslo"}
 *
 * Both providers are called at once; the answer maps provider name → reading, and the call fails
 * (502, naming the provider) unless both answer with a reading that fits `Reading`.
 * Configure with WEATHER_A_URL, WEATHER_A_KEY, WEATHER_B_URL, WEATHER_B_TOKEN; they are read at
 * request time, so the endpoint loads (and /health tells you what is missing) without them.
 */
import { defineEndpoint, z } from 'hangar';

const Reading = z.object({
  city: z.string(),
  temp_c: z.number(),
  conditions: z.string(),
});

export default defineEndpoint({
  description: 'Current weather from two providers, side by side',
  version: '1.0.0',
  path: '/current',
  methods: ['GET', 'POST'],
  aggregation: 'ALL',
  request: z.object({
    city: z.string().min(1),
    units: z.enum(['metric', 'imperial']).default('metric'),
  }),
  response: Reading,
  upstreams: [
    {
      name: 'provider_a',
      base_url: '${WEATHER_A_URL}',
      path: '/v1/current',
      auth: { type: 'API_KEY', api_key: '${WEATHER_A_KEY}' },
      timeout_ms: 3_000,
      retries: 2,
    },
    {
      name: 'provider_b',
      base_url: '${WEATHER_B_URL}',
      path: '/now',
      auth: { type: 'BEARER', api_key: '${WEATHER_B_TOKEN}' },
      timeout_ms: 3_000,
    },
  ],
});
