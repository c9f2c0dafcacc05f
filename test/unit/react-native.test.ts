/** The specs of test/unit/react-native/, as one test file (test/support/specs.ts says why). */
import { specs } from '../support/specs';

specs('react-native');
