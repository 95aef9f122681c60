/**
 * What a drop-in author's editor sees (#32): a tool's `run` gets its arguments typed by the input
 * schema (after defaults), must return what the output schema accepts, and a typed tool fits an
 * agent's `tools`; `ctx.model.object` is typed by its schema. Checked by `npm run typecheck`.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { defineAgent, defineTool, type RunContext, z } from '../../core/sdk.js';

describe('tool types', () => {
  it('types run by the schemas', () => {
    const weather = defineTool({
      name: 'weather',
      description: 'd',
      input: z.object({ city: z.string(), unit: z.enum(['c', 'f']).default('c') }),
      output: z.object({ celsius: z.number() }),
      run: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ city: string; unit: 'c' | 'f' }>();
        return { celsius: 1 };
      },
    });
    defineTool({
      name: 'wrong',
      description: 'd',
      input: z.object({}),
      output: z.object({ celsius: z.number() }),
      // @ts-expect-error the output schema wants a number
      run: () => ({ celsius: 'warm' }),
    });
    defineAgent({ instructions: 'x', tools: [weather] });
  });

  it('types ctx.model.object by its schema', () => {
    const use = async (ctx: RunContext) => {
      const value = await ctx.model.object(z.object({ days: z.number() }), []);
      expectTypeOf(value).toEqualTypeOf<{ days: number }>();
    };
    expectTypeOf(use).toBeFunction();
  });
});
