// The dependency rule (`npm run lint:deps`, run by .ci/run after the type-check; see
// docs/development.md): modules form a one-way graph, platform/ knows no domain, and a module is
// reached only through its index.ts. Type-only imports count like any other.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      severity: 'error',
      comment: 'No import cycle anywhere in src/. Break one with an interface handed in at wiring time (app.ts) or an event.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'platform-knows-no-module',
      severity: 'error',
      comment: 'src/platform/ knows no domain: it imports no module and not app.ts (wiring types live in platform/module.ts).',
      from: { path: '^src/platform/' },
      to: { path: ['^src/modules/', '^src/app\\.ts$'] },
    },
    {
      name: 'module-through-index',
      severity: 'error',
      comment: "A module imports another module only through that module's index.ts (never its routes, service or repo).",
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'outside-through-index',
      severity: 'error',
      comment: "app.ts, the CLI and the server reach a module only through its index.ts.",
      from: { path: '^src/', pathNot: '^src/modules/' },
      to: { path: '^src/modules/[^/]+/', pathNot: '^src/modules/[^/]+/index\\.ts$' },
    },
    {
      name: 'module-not-through-own-index',
      severity: 'error',
      comment: "A module's own files import each other directly; its index.ts is for the outside.",
      from: { path: '^src/modules/([^/]+)/', pathNot: '^src/modules/[^/]+/index\\.ts$' },
      to: { path: '^src/modules/$1/index\\.ts$' },
    },
  ],
  options: {
    includeOnly: '^src/',
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
