/** rampart.v1.Devices: the device registry, through DeviceService as the REST device routes. */
import { unary, type Door } from './call';
import { deviceMessage } from './mappers';
import { required } from './errors';
import type { DevicesHandlers } from './generated/rampart/v1/Devices';

export function devicesHandlers(door: Door): DevicesHandlers {
  const devices = door.services.devices;
  return {
    ListUserDevices: unary(door, async (req, { principal }) => {
      const list = await devices.listForUser(principal.env, required('user_id', req.userId), [req.clientId]);
      return { totalCount: list.length, devices: list.map((d) => deviceMessage(d.device, d.current)) };
    }),
    GetDevice: unary(door, async (req, { principal }) =>
      deviceMessage(await devices.get(principal.env.id, required('device_token', req.deviceToken))),
    ),
    ApproveDevice: unary(door, async (req, { principal }) =>
      deviceMessage(await devices.approve(principal.env.id, required('device_token', req.deviceToken))),
    ),
    ReportDevice: unary(door, async (req, { principal }) =>
      deviceMessage(await devices.report(principal.env, required('device_token', req.deviceToken))),
    ),
  };
}
