/**
 * What a verdict hands the lists (core/lists): the values of an event lists are matched on, and
 * the `in_list` signal a match adds (the list and item named, for the application and the analyst).
 */
import type { Device, Signals } from '../model';
import { CompiledLists, type EventValues, type ListMatch } from '../lists/matcher';
import { machineOf } from '../scoring/population';
import { eventEmail, type Enriched } from './observe';

/** No lists (an environment without any, or a service built without lists). */
export const NO_LISTS = new CompiledLists(0);

/**
 * The values of an event lists are matched on. A device is named by its token (when known), its
 * key, and the fingerprint sent (a Rampart client token's fingerprint also by the device key it carries).
 */
export function eventValues(x: Enriched, device: Device | null): EventValues {
  const fp = x.event.context.fingerprint;
  const devices: string[] = [];
  if (device) devices.push(device.token);
  devices.push(x.key.key);
  if (fp) devices.push(fp.startsWith('rp:') ? fp.slice(3) : fp);
  return {
    userId: x.event.userId,
    email: eventEmail(x.event),
    emailDomain: x.features.emailDomain,
    ip: x.event.context.ip,
    asn: x.ip?.asn?.number ?? null,
    country: x.ip?.location?.country_code ?? null,
    devices,
    machine: machineOf(x.features),
    shape: x.features.shape,
  };
}

/** The `in_list` signal's detail: the first list matched and its item, and every list matched. */
export function listSignal(matches: readonly ListMatch[]): Signals[string] {
  const m = matches[0] as ListMatch;
  return {
    score: 0,
    list_id: m.list.id,
    list_name: m.list.name,
    item_id: m.entry.itemId,
    value: m.entry.value,
    field: m.list.primaryField,
    list_ids: matches.map((x) => x.list.id).join(','),
  };
}
