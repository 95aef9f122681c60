// rate-limiter-flexible ships declarations for its index only; its files, as core/http/security.ts imports them.
declare module 'rate-limiter-flexible/lib/RateLimiterMemory.js' {
  const RateLimiterMemory: unknown;
  export default RateLimiterMemory;
}
declare module 'rate-limiter-flexible/lib/RateLimiterRes.js' {
  const RateLimiterRes: unknown;
  export default RateLimiterRes;
}
