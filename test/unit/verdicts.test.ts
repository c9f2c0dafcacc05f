/**
 * The specs of test/unit/verdicts/, as one test file (test/support/specs.ts says why): the verdict
 * use case's tests, a file of their own because their detection scenarios make about 1,200
 * verdicts, the tier's longest file, which then runs beside the others on a second worker.
 */
import { specs } from '../support/specs';

specs('verdicts');
