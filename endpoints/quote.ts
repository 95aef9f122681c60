/**
 * Example: custom logic. A price quote in any currency:
 *
 *   POST /api/v1/endpoints/quote  {"sku": "A-100", "quantity": 3, "currency": "EUR"}
 *
 * The handler asks the catalogue for the USD price, calls the FX service only when another
 * currency is wanted (an upstream that is not needed is not called), and computes the total
 * locally. Each upstream has its own answer model and its own credentials (the FX service uses
 * OAuth2 client credentials; its token is cached and shared by concurrent calls).
 * Configure with CATALOG_URL, CATALOG_KEY, FX_URL, FX_TOKEN_URL, FX_CLIENT_ID, FX_CLIENT_SECRET.
 */
import { defineEndpoint, z } from 'hangar';

const Quote = z.object({
  sku: z.string(),
  quantity: z.number().int(),
  currency: z.string(),
  unit_price: z.number(),
  total: z.number(),
  rate: z.number(),
});

export default defineEndpoint({
  description: 'Price quote in any currency (catalogue price × FX rate)',
  version: '1.0.0',
  methods: ['POST'],
  request: z.object({
    sku: z.string().min(1),
    quantity: z.number().int().positive().default(1),
    currency: z.string().length(3).toUpperCase().default('USD'),
  }),
  output: Quote,
  upstreams: [
    {
      name: 'catalog',
      base_url: '${CATALOG_URL}',
      path: '/items',
      method: 'GET',
      auth: { type: 'API_KEY', api_key: '${CATALOG_KEY}', header_name: 'X-Catalog-Key' },
      response: z.object({ sku: z.string(), price_usd: z.number().nonnegative() }),
    },
    {
      name: 'fx',
      base_url: '${FX_URL}',
      path: '/rates',
      method: 'GET',
      auth: {
        type: 'OAUTH2_CLIENT_CREDENTIALS',
        token_url: '${FX_TOKEN_URL}',
        client_id: '${FX_CLIENT_ID}',
        client_secret: '${FX_CLIENT_SECRET}',
        scope: 'rates:read',
        token_leeway: '60s',
      },
      response: z.object({ base: z.string(), quote: z.string(), rate: z.number().positive() }),
    },
  ],
  async handler(input, ctx) {
    const item = await ctx.call<{ price_usd: number }>('catalog', { input: { sku: input.sku } });
    const rate =
      input.currency === 'USD' ? 1 : (await ctx.call<{ rate: number }>('fx', { input: { base: 'USD', quote: input.currency } })).rate;
    // Round to cents once, on the unit price, so unit_price × quantity is exactly the total.
    const unit = Math.round(item.price_usd * rate * 100) / 100;
    return {
      sku: input.sku,
      quantity: input.quantity,
      currency: input.currency,
      unit_price: unit,
      total: Math.round(unit * input.quantity * 100) / 100,
      rate,
    };
  },
});
