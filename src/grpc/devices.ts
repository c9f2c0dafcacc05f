/** rampart.v1.Devices: the device registry, through DeviceService as the REST device routes. */
import { fingerprintKeyOf } from '../core/devices/service';
import { fingerprintValue } from '../core/events/context';
import { unary, type Door } from './call';
import { deviceMessage } from './mappers';
import { required } from './translate';
import type { DevicesHandlers } from './generated/rampart/v1/Devices';

export function devicesHandlers(door: Door): DevicesHandlers {
  const devices = door.services.devices;
  return {
    ListUserDevices: unary(door, async (req, { principal }) => {
      const list = await devices.listForUser(principal.env.id, required('user_id', req.userId));
      const cid = fingerprintValue(req.clientId);
      const key = cid ? fingerprintKeyOf(cid) : null;
      return { totalCount: list.length, devices: list.map((d) => deviceMessage(d, key)) };
    }),
    GetDevice: unary(door, async (req, { principal }) => deviceMessage(await devices.get(principal.env.id, required('device_token', req.deviceToken)))),
    ApproveDevice: unary(door, async (req, { principal }) => deviceMessage(await devices.approve(principal.env.id, required('device_token', req.deviceToken)))),
    ReportDevice: unary(door, async (req, { principal }) => deviceMessage(await devices.report(principal.env, required('device_token', req.deviceToken)))),
  };
}
