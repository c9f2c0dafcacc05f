/**
 * Rampart's connection defaults apply only where MONGODB_URI says nothing: an operator's options
 * in the connection string (a pool size, a longer server selection for a replica set's
 * elections) are the ones the driver uses.
 */
import { connect, uriOptionNames } from '../../src/store/database';

const base = process.env.MONGODB_URI as string;
const withOptions = (uri: string, query: string) =>
  uri.includes('?') ? `${uri}&${query}` : `${uri.replace(/\/?$/, '/')}?${query}`;

it.each([
  ['mongodb://a:1,b:2/db?w=majority&maxPoolSize=20', ['w', 'maxpoolsize']],
  [
    'mongodb+srv://cluster.example/?retryWrites=true&readPreference=primary',
    ['retrywrites', 'readpreference'],
  ],
  ['mongodb://localhost:27017', []],
  ['mongodb://localhost:27017/?', []],
])('reads the option names of %s', (uri, names) => {
  expect([...uriOptionNames(uri)].sort()).toEqual([...names].sort());
});

it("keeps the connection string's options and fills in Rampart's defaults for the rest", async () => {
  const given = await connect(
    withOptions(base, 'maxPoolSize=7&serverSelectionTimeoutMS=12000'),
    'connect_options',
    { lazy: true },
  );
  try {
    expect(given.client.options.maxPoolSize).toBe(7);
    expect(given.client.options.serverSelectionTimeoutMS).toBe(12000);
    expect(given.client.options.heartbeatFrequencyMS).toBe(1000);
  } finally {
    await given.close();
  }
  const plain = await connect(base, 'connect_options', { lazy: true, maxPoolSize: 9 });
  try {
    expect(plain.client.options.maxPoolSize).toBe(9);
    expect(plain.client.options.serverSelectionTimeoutMS).toBe(5000);
  } finally {
    await plain.close();
  }
});
