// Layering: the core knows no protocol and no driver; adapters never reach into each other.
module.exports = {
  forbidden: [
    {
      name: 'core-is-plain',
      severity: 'error',
      comment: 'src/core imports no fastify, grpc, graphql, apollo, mongodb, nodemailer or other layers',
      from: { path: '^src/core' },
      to: { path: ['node_modules/(fastify|@grpc|graphql|@apollo|mongodb|nodemailer|pino)', '^src/(store|rest|grpc|graphql|console|app|cli|mail)'] },
    },
    {
      name: 'doors-are-separate',
      severity: 'error',
      from: { path: '^src/(rest|grpc|graphql|console)/' },
      to: { path: '^src/(rest|grpc|graphql|console)/', pathNot: '^src/$1/' },
    },
    {
      name: 'store-not-to-doors',
      severity: 'error',
      from: { path: '^src/store' },
      to: { path: '^src/(rest|grpc|graphql|console|app|cli)' },
    },
    { name: 'no-circular', severity: 'warn', from: { pathNot: '^src/grpc/generated' }, to: { circular: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
