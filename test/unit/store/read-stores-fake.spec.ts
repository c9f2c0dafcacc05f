/**
 * The in-memory fakes of the dashboards' read ports (test/support/fakes/reads.ts) hold the
 * contract the MongoDB stores hold (test/integration/read-stores.test.ts runs the same cases).
 */
import { createFakeAnalyticsStore, createFakeQueryStore } from '../../support/fakes/reads';
import { READ_STORE_DATA, readStoreContract } from '../../support/contracts/read-stores';

readStoreContract('the in-memory fakes', async () => {
  const sources = {
    events: () => READ_STORE_DATA.events,
    rejected: () => READ_STORE_DATA.rejected,
    devices: () => READ_STORE_DATA.devices,
  };
  return { queries: createFakeQueryStore(sources), analytics: createFakeAnalyticsStore(sources) };
});
