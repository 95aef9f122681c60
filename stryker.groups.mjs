/**
 * The modules that guard users and their data, grouped, each with the tests that exercise it.
 * Each group is its own Stryker run (`scripts/mutate.mjs`), so a mutant is only ever tested against
 * the tests that can reach it, and a group's incremental file records only its own mutants.
 */
export const MUTATION_GROUPS = {
  // The HTTP guards, one group per module, so each is measured in one short run against the tests
  // that reach it (a group's incremental file keeps every module it ever measured).
  http: {
    mutate: ['core/http/security.ts'],
    tests: [
      'test/security/host-check.test.ts',
      'test/security/security-rules.test.ts',
      'test/security/limits.test.ts',
      'test/security/cross-site.test.ts',
      'test/security/path-normalization.test.ts',
      'test/security/websocket-origin.test.ts',
      'test/security/hardening.test.ts',
      'test/kernel/http.test.ts',
    ],
  },
  'cross-site': {
    mutate: ['core/http/cross-site.ts'],
    tests: [
      'test/security/cross-site.test.ts',
      'test/security/cross-site-rules.test.ts',
      'test/security/websocket-origin.test.ts',
      'test/security/hardening.test.ts',
    ],
  },
  paths: {
    mutate: ['core/http/normalize.ts'],
    tests: ['test/security/normalize-rules.test.ts', 'test/security/path-normalization.test.ts'],
  },
  storage: {
    // The embedded store's rules: a collection's records, groups and pages (sqlite-records.ts),
    // keyed logs (sqlite-logs.ts: items by shape, pages, versions, the limits of a key and of the
    // store), the invocation log's pages and pruning (sqlite-invocations.ts), and the store itself
    // (sqlite-store.ts from writeFailed on: open, damage, the migration loop, transactions,
    // indexes, stats). Module-level constants are left out, as their mutants are static (each
    // runs every test of the group): the shared statements, KEY_SPAN, the ISO pattern, the
    // invocation table's schema, the MIGRATIONS texts (schema-upgrade.test.ts opens a file of the
    // older schema), node:sqlite's loader, DAMAGE_CODES. The ranges run from each module's first
    // rule to its end, around those constants: keep them so when a module changes. sqlite-sql.ts (the statement runner and encode,
    // reached by every test) is not measured.
    // The checkpoint thread's class (sqlite-checkpointer.ts from WalCheckpointer on; the worker's
    // source above it is a string) is checked by wal-checkpoints.test.ts (a few seconds: a server,
    // a child process, ~52 MB of writes).
    // Tests: sqlite-rules.test.ts (SQLite only, under a second) and schema-upgrade.test.ts. The
    // contract tests that hold SQLite and PostgreSQL to one behaviour (sqlite-store, group-counts,
    // invocation-table, store-copy) start a PostgreSQL cluster per file, and indexed-lists seeds
    // 10,000 threads: a file's set-up runs again for every mutant a test of it covers, minutes
    // per module on two shared cores, so the SQLite rules they check are in sqlite-rules.test.ts.
    mutate: [
      'core/storage/sqlite-records.ts:16-218',
      'core/storage/sqlite-logs.ts:37-222',
      'core/storage/sqlite-invocations.ts:33-86',
      'core/storage/sqlite-store.ts:235-542',
      'core/storage/sqlite-store.ts:554-568',
      'core/storage/sqlite-checkpointer.ts:104-220',
    ],
    tests: ['test/storage/sqlite-rules.test.ts', 'test/storage/schema-upgrade.test.ts', 'test/storage/wal-checkpoints.test.ts'],
  },


  tasks: {
    // records.ts from its class on: its constants (the parts, the 64 KB limit) are static mutants.
    mutate: ['core/tasks/lifecycle.ts', 'core/tasks/runner.ts', 'core/tasks/recovery.ts', 'core/tasks/records.ts:31-150'],
    tests: ['test/tasks/*.test.ts'],
  },
  approvals: {
    mutate: ['core/agents/approvals.ts'],
    tests: [
      'test/agents/approvals.test.ts',
      'test/agents/approval-rules.test.ts',
      'test/agents/engine.test.ts',
      'test/agents/restart.test.ts',
    ],
  },
  deadline: {
    mutate: ['core/agents/deadline.ts'],
    tests: ['test/agents/deadlines.test.ts', 'test/agents/deadline-cleanup.test.ts', 'test/agents/deadline-rules.test.ts'],
  },
  aggregate: {
    mutate: ['core/endpoints/aggregate.ts'],
    tests: ['test/endpoints/aggregate.test.ts', 'test/endpoints/aggregate-rules.test.ts'],
  },
  gates: {
    // The rules that classify a run (exit code first, then failing tests, then the signatures of a
    // check that is not there): nodeTestFolders to the end of classify, lines 293-420 (keep the range
    // on them when the file changes). The whole file is 556 mutants, 225 of them static (the
    // CHECK_SIGNATURES table, built at import, so each runs every test of the group, real toolchains
    // included): about two hours on two cores, beyond what a group should take.
    mutate: ['core/coderun/gates.ts:293-420'],
    tests: ['test/coderun/gate-signatures.test.ts', 'test/coderun/gate-rules.test.ts', 'test/coderun/model-and-gates.test.ts'],
  },
  discovery: {
    // Which files are entries (candidatesIn, entryOf), the scan (build cache, path order, load
    // timeouts), what a change reloads (handleChange: folders gone, the module graph) and how an
    // entry loads, fails and unloads (names, duplicates, renames, problems, log lines), and the JSON
    // version: lines 38-60, 96-180 and 256 to the end. Left out: the module constants (static
    // mutants) and the file-event machinery of lines 181-255 (watch, scanFolder, close, idle, the
    // debounce and the queue), whose mutants either leave idle() waiting for good (each a 20 s
    // timeout and a restarted test runner) or change only when a reload happens, not what it
    // loads: a first run of the whole file had done 167 of 416 mutants after 21 minutes on two
    // shared cores. Tests: discovery-rules.test.ts (the real Discovery and Registry on real files,
    // seconds in all); discovery, load-errors and load-timeout start a server per test, too slow
    // to run again for each mutant.
    mutate: ['core/kernel/discovery.ts:38-60', 'core/kernel/discovery.ts:96-180', 'core/kernel/discovery.ts:256-465'],
    tests: ['test/kernel/discovery-rules.test.ts'],
  },
  supervision: {
    // The supervised host for drop-in code (dropin-host.ts): how restarts are reported (hostReports,
    // from line 60), HostThread (warming, restarts counted once per thread death, the spare, the
    // status, retire and close) and DropInHosts (the watchdog, the heap cap, cancellation and its
    // grace, a call the host never started run again once, forget, close), to line 452. Left out:
    // the types above and locate/isLoadedDropIn/hostedSource below (which build a call runs, read
    // from the registry and the bundles discovery kept: not supervision, and reached only with a
    // server). Tests: supervision-rules.test.ts (real host threads of the endpoint kind's entry
    // running fixture drop-in code, no server, ten seconds); the kinds' tests (supervised-kinds,
    // router-host, test/agents/supervised-*) start a server per file, too slow per mutant.
    mutate: ['core/kernel/dropin-host.ts:60-452'],
    tests: ['test/dropins/supervision-rules.test.ts'],
  },
  notebook: {
    // The reactive engine: saved outputs starting stale (lines 87-92), cell states, edits, runs, a
    // lost kernel (114-458) and what a reload from disk makes stale (#adopt, 606-646); keep the
    // ranges on them when the file changes. Left out: the file handling between them (save, merge,
    // following the disk, and updateCell's edit made from a source a reload replaced; the
    // safe-saves and merge tests' ground), which holds no staleness rule.
    mutate: [
      'core/notebook/session.ts:87-92',
      'core/notebook/session.ts:114-176',
      'core/notebook/session.ts:183-198',
      'core/notebook/session.ts:200-201',
      'core/notebook/session.ts:218-458',
      'core/notebook/session.ts:606-646',
    ],
    tests: [
      'test/notebook/session.test.ts',
      'test/notebook/staleness.test.ts',
      'test/notebook/session-rules.test.ts',
      'test/notebook/ui-elements.test.ts',
    ],
  },
};
