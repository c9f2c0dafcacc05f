/** The specs of test/unit/app/, as one test file (test/support/specs.ts says why). */
import { specs } from '../support/specs';

specs('app');
