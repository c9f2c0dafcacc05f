// Layering: the core knows no protocol and no driver; adapters never reach into each other.
module.exports = {
  forbidden: [
    {
      name: 'core-is-plain',
      severity: 'error',
      comment:
        "src/core imports no fastify, grpc, graphql, apollo, mongodb, nodemailer or other layers, and no adapter: the IP and user-agent data come through the Intel port (src/intel implements it), their types are the core's own (src/core/intel)",
      from: { path: '^src/core' },
      to: {
        path: [
          'node_modules/(fastify|@grpc|graphql|@apollo|mongodb|nodemailer|pino)',
          '^src/(store|rest|grpc|graphql|console|doors|workers|app|cli|mail|intel)',
        ],
      },
    },
    {
      name: 'core-is-pure',
      severity: 'error',
      comment:
        'src/core uses no Node built-in but node:crypto (hashes, MACs, random ids): time comes from the Clock port (its monotonic reading for durations), reference data through the Intel port',
      from: { path: '^src/core' },
      to: { dependencyTypes: ['core'], pathNot: '^(node:)?crypto$' },
    },
    {
      name: 'doors-are-separate',
      severity: 'error',
      from: { path: '^src/(rest|grpc|graphql|console)/' },
      to: { path: '^src/(rest|grpc|graphql|console)/', pathNot: '^src/$1/' },
    },
    {
      name: 'doors-not-to-app',
      severity: 'error',
      comment:
        'the doors (and their shared kit, src/doors) import the core and the kit, never the composition root that builds them',
      from: { path: '^src/(rest|grpc|graphql|console|doors)/' },
      to: { path: ['^src/(app|cli)/', '^src/main\\.ts$'] },
    },
    {
      name: 'doors-know-no-driver',
      severity: 'error',
      comment:
        "the store translates its driver errors into the core's (store/errors.ts): no door reads the store or the MongoDB driver",
      from: { path: '^src/(rest|grpc|graphql|console|doors)/' },
      to: { path: ['^src/store/', 'node_modules/mongodb'] },
    },
    {
      name: 'door-kit-is-shared',
      severity: 'error',
      comment: 'src/doors is what every door shares: it knows none of them',
      from: { path: '^src/doors/' },
      to: { path: '^src/(rest|grpc|graphql|console)/' },
    },
    {
      name: 'workers-are-adapters',
      severity: 'error',
      comment:
        "src/workers run the core's ports (timers, HTTP posting, sweeps): they use the core and nothing else of Rampart",
      from: { path: '^src/workers/' },
      to: { path: '^src/(store|rest|grpc|graphql|console|doors|app|cli|mail)' },
    },
    {
      name: 'store-not-to-doors',
      severity: 'error',
      from: { path: '^src/store' },
      to: { path: '^src/(rest|grpc|graphql|console|doors|app|cli)' },
    },
    {
      name: 'react-native-ships-alone',
      severity: 'error',
      comment:
        'src/react-native is published on its own as @rampart/react-native and runs on Hermes: it imports nothing of Rampart outside itself (no core, nothing server-side), no Node built-in, and of packages only @noble/hashes and its React Native peers',
      from: { path: '^src/react-native/' },
      to: {
        pathNot: [
          '^src/react-native/',
          '^node_modules/@noble/hashes/',
          '^(react-native|@react-native-async-storage/async-storage|react-native-keychain|react-native-device-info|jail-monkey)$',
        ],
      },
    },
    {
      name: 'server-not-to-react-native',
      severity: 'error',
      comment: 'the React Native client is a separate package: the server never loads it',
      from: { path: '^src/', pathNot: '^src/react-native/' },
      to: { path: '^src/react-native/' },
    },
    {
      name: 'browser-ships-alone',
      severity: 'error',
      comment:
        'src/browser is bundled into the page (rampart.js, rampart.mjs) and published as @rampart/browser: it imports nothing outside itself but the wire types of core/client/wire.ts, and no package',
      from: { path: '^src/browser/' },
      to: { pathNot: ['^src/browser/', '^src/core/client/wire\\.ts$'] },
    },
    {
      name: 'server-not-to-browser',
      severity: 'error',
      comment: 'the browser client runs in pages: the server serves its bundle and never loads it',
      from: { path: '^src/', pathNot: '^src/browser/' },
      to: { path: '^src/browser/' },
    },
    {
      name: 'no-circular',
      severity: 'warn',
      from: { pathNot: '^src/grpc/generated' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
