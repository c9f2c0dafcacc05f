/** The specs of test/unit/usecases/, as one test file (test/support/specs.ts says why). */
import { specs } from '../support/specs';

specs('usecases');
