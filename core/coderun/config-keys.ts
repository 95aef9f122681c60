/**
 * Keys the HTTP configuration route may not change; they stay loadable from the config file.
 * A module of its own, free of imports, so the settings view (desktop/views/runs) bundles this list
 * rather than a copy of it, without pulling the schemas and zod into the browser.
 */
export const READ_ONLY_CONFIG_KEYS = ['mcp_servers', 'skills_dirs', 'context_role_budget', 'repos'] as const;
