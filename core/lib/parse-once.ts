/**
 * zod's parse options for a schema parsed once per load (the settings, a drop-in's definition):
 * without zod's JIT. On an object schema's first parse zod compiles a fast path for it (`new
 * Function`), which pays off over the many parses of a request body's schema but is most of the
 * cost of one parse: the first parses of the settings and of the drop-ins' definitions were about
 * 25 ms of every start's CPU (a profile of a cold start of the example workspace).
 */
export const PARSE_ONCE = { jitless: true } as const;
