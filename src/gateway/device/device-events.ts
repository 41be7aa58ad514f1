// The async events of the gateway's ibv device in the log: the engine's
// device_events agent publishes each one as a deviceEvent record
// (native/src/engine/record_types.h), so nothing here calls into the engine
// (a stalled engine must not freeze the control plane). One pino line each,
// naming the device, the port and the element (QPN, CQ, SRQ). A QP that went
// fatal ends the session on it: its provider loses it (cancel-on-disconnect
// for trading; /v1/sessions lists it with the event as endedBy) or closes it,
// and the line says which session and why. With backend.alternateDevice the
// events of both devices come here; each record names its device by the
// kernel's index, as QPNs are per device.
import { loadAddon } from '../../native/addon.js';
import { RecordType, type Engine } from '../../native/engine.js';
import type { Device } from '../../native/verbs.js';
import type { Logger } from '../log.js';
import type { SessionDevice, SessionProvider } from '../../common/session-provider.js';

const ELEMENTS = ['DEVICE', 'PORT', 'QP', 'CQ', 'SRQ'] as const;

export interface DeviceEventRecord {
  type: string;
  element: (typeof ELEMENTS)[number];
  elementId: number;
  /** The device's kernel index (Device.index). */
  deviceIndex: number;
  context: bigint;
}

/** The gateway's devices: the primary, and backend.alternateDevice's. */
export interface GatewayDevices {
  primary: Device;
  alternate: Device | undefined;
}

/** A deviceEvent record's 24 bytes (native/src/engine/record_types.h kDeviceEvent). */
export function decodeDeviceEvent(p: Uint8Array, typeNames: readonly string[]): DeviceEventRecord {
  const v = new DataView(p.buffer, p.byteOffset, p.byteLength);
  const type = v.getUint32(0, true);
  return {
    type: typeNames[type] ?? `IBV_EVENT_${type}`,
    element: ELEMENTS[v.getUint32(4, true)] ?? 'DEVICE',
    elementId: v.getUint32(8, true),
    deviceIndex: v.getUint32(12, true),
    context: v.getBigUint64(16, true),
  };
}

// Events that say something went wrong (warn); the rest (PORT_ACTIVE, COMM_EST, ...) are news (info).
const TROUBLE = /ERR|FATAL|LIMIT|LAST_WQE/;
const QP_ENDING = new Set(['IBV_EVENT_QP_FATAL', 'IBV_EVENT_QP_REQ_ERR', 'IBV_EVENT_QP_ACCESS_ERR']);

/** Logs the device's events as they come; returns the unsubscribe. */
export function watchDeviceEvents(engine: Engine, devices: GatewayDevices, providers: readonly SessionProvider[], log: Logger): () => void {
  const names = (loadAddon() as unknown as { verbs: { asyncEventTypes: string[] } }).verbs.asyncEventTypes;
  return engine.onRecord(RecordType.deviceEvent, (payload) => {
    const e = decodeDeviceEvent(payload, names);
    const which = devices.alternate !== undefined && e.deviceIndex === devices.alternate.index ? 'alternate' : 'primary';
    const device = which === 'alternate' ? devices.alternate! : devices.primary;
    const where = { device: device.name, port: e.element === 'PORT' ? e.elementId : device.port };
    const element = e.element === 'QP' ? { qpn: e.elementId } : e.element === 'CQ' ? { cq: e.elementId } : e.element === 'SRQ' ? { srq: e.elementId } : {};
    const line = { ...where, event: e.type, ...element };
    if (e.element === 'QP' && QP_ENDING.has(e.type)) {
      const ended = endSessionOn(e.elementId, which, e.type, providers);
      log.warn({ ...line, ...(ended ?? {}) }, ended ? `device event ${e.type}: session ${ended.session} ended` : `device event ${e.type}`);
      return;
    }
    (TROUBLE.test(e.type) ? log.warn.bind(log) : log.info.bind(log))(line, `device event ${e.type}`);
  });
}

function endSessionOn(qpn: number, device: SessionDevice, event: string, providers: readonly SessionProvider[]): { session: number; role: string; name: string } | undefined {
  for (const p of providers) {
    const s = p.list().find((x) => x.qpn === qpn && (x.device ?? 'primary') === device);
    if (s !== undefined && (p.end !== undefined ? p.end(s.id, event) : p.close(s.id))) return { session: s.id, role: s.role, name: s.name };
  }
  return undefined;
}
