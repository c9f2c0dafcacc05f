// graphql-codegen plugin: emits the merged schema as a TypeScript string, so that the server
// serves exactly the schema the resolver types were generated from (no file reads at run time).
'use strict';
const { lexicographicSortSchema, printSchema } = require('graphql');

module.exports = {
  plugin(schema) {
    const sdl = printSchema(lexicographicSortSchema(schema));
    return `/** The schema of schema/*.graphql, merged and sorted. */\nexport const typeDefs = ${JSON.stringify(sdl)};\n`;
  },
};
