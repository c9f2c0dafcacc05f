/** The specs of test/unit/state/, as one test file (test/support/specs.ts says why). */
import { specs } from '../support/specs';

specs('state');
