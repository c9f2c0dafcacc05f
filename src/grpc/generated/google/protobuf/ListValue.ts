// Original file: null

import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from '../../google/protobuf/Value';

export interface ListValue {
  'values'?: (_google_protobuf_Value)[];
}

export interface ListValue__Output {
  'values': (_google_protobuf_Value__Output)[];
}
