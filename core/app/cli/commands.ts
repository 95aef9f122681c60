/**
 * Sub-commands of `hangar` beyond starting the server (`hangar notebook …`, `hangar code …`,
 * `hangar login`, `hangar list`, `hangar init`, `hangar store`).
 * Each is loaded only when used, so the server's start-up never pays for them.
 */
export type CommandRunner = (args: string[]) => Promise<number>;

export const COMMANDS: Record<string, () => Promise<CommandRunner>> = {
  code: () => import('./code.js').then((m) => m.codeCli),
  init: () =>
    Promise.all([import('./init.js'), import('../../../desktop/build.js')]).then(
      ([m, build]) =>
        (args: string[]) =>
          m.initCli(args, build.repositoryRoot()),
    ),
  list: () =>
    Promise.all([import('./list.js'), import('../../../desktop/build.js')]).then(
      ([m, build]) =>
        (args: string[]) =>
          m.listCli(args, build.repositoryRoot()),
    ),
  login: () => import('./login.js').then((m) => (args: string[]) => m.loginCli(args)),
  notebook: () => import('./notebook.js').then((m) => (args: string[]) => m.notebookCli(args)),
  store: () => import('./store.js').then((m) => (args: string[]) => m.storeCli(args)),
};
