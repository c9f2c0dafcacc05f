/** The specs of test/unit/store/, as one test file (test/support/specs.ts says why). */
import { specs } from '../support/specs';

specs('store');
