/**
 * `${NAME}` references inside a setting's value (`Bearer ${API_TOKEN}`), as Claude Desktop's and
 * VS Code's MCP configurations and OTLP header settings are written: each is replaced by the
 * environment variable, read at the moment of use so a secret never sits in the settings file.
 */
export function expandEnvRefs(value: string, env: NodeJS.ProcessEnv = process.env): string {
  return value.replace(/\$\{([A-Za-z0-9_]+)\}/g, (_, name: string) => {
    const resolved = env[name];
    if (resolved === undefined) throw new Error(`environment variable ${name} is not set`);
    return resolved;
  });
}
