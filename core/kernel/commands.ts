/**
 * Sub-commands of `hangar` beyond starting the server (`hangar notebook …`, `hangar code …`,
 * `hangar login`).
 * Each is loaded only when used, so the server's start-up never pays for them.
 */
export type CommandRunner = (args: string[]) => Promise<number>;

export const COMMANDS: Record<string, () => Promise<CommandRunner>> = {
  code: () => import('../coderun/cli.js').then((m) => m.codeCli),
  login: () => import('../coderun/login-cli.js').then((m) => (args: string[]) => m.loginCli(args)),
  notebook: () => import('../notebook/cli.js').then((m) => (args: string[]) => m.notebookCli(args)),
};
