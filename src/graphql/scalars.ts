/** The custom scalars: DateTime (ISO 8601 in UTC, Date inside) and JSON (output only). */
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function parseInstant(value: unknown): Date {
  if (typeof value !== 'string' || !ISO.test(value))
    throw new GraphQLError('DateTime must be an ISO 8601 string with a time zone, e.g. 2024-05-01T12:00:00Z');
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new GraphQLError('DateTime is not a valid instant');
  return d;
}

export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  serialize(value) {
    if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString();
    throw new GraphQLError('DateTime cannot represent this value');
  },
  parseValue: parseInstant,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string', { nodes: ast });
    return parseInstant(ast.value);
  },
});

/** Free-form JSON, answered as sent. No argument takes it, so it never parses input. */
export const JSONScalar = new GraphQLScalarType<unknown, unknown>({
  name: 'JSON',
  serialize: (value) => value,
  parseValue() {
    throw new GraphQLError('JSON is an output type only');
  },
  parseLiteral() {
    throw new GraphQLError('JSON is an output type only');
  },
});
