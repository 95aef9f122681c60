/**
 * `s` as a pattern that matches exactly `s` (RegExp.escape is Node 24's; Node 22 is still supported).
 */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
