// The gateway's verbs device: opened after the engine starts, closed before
// it stops, and described the way `ibv_devinfo` / `ibstat` describe one.
import type { GatewayConfig } from '../config/schema.js';
import { loadAddon } from '../../native/addon.js';
import { openDevice, type Device, type PortAttr } from '../../native/verbs.js';
import type { Engine } from '../../native/engine.js';

export const IBV_NOT_AVAILABLE = 'backend.kind ibv is not available in this build yet';

/** Opens the configured backend's device on the engine. Throws a one-line reason when it cannot. */
export function openGatewayDevice(config: GatewayConfig, engine: Engine): Device {
  const { backend } = config;
  if (backend.kind === 'ibv') {
    // The addon reports an ibv device opener once the ibv backend is wired into the bindings.
    const verbs = (loadAddon() as unknown as { verbs?: { openIbvDevice?: unknown } }).verbs;
    if (typeof verbs?.openIbvDevice !== 'function') throw new Error(IBV_NOT_AVAILABLE);
    throw new Error(`${IBV_NOT_AVAILABLE} (the addon has an ibv device, the gateway does not drive it yet)`);
  }
  try {
    return openDevice(engine, { address: backend.address });
  } catch (err) {
    const e = err as Error & { code?: string };
    const why =
      e.code === 'EADDRINUSE'
        ? `another soft device (in this or another process) owns ${backend.address}:4791`
        : e.code === 'EADDRNOTAVAIL'
          ? `no interface has the address ${backend.address}`
          : e.message;
    throw new Error(`cannot open the soft device on ${backend.address}: ${why} (backend.address)`, { cause: err });
  }
}

const hex = (v: bigint, digits = 16): string => `0x${v.toString(16).padStart(digits, '0')}`;

/** ibstat's words for a port state. */
export function portStateName(state: PortAttr['state']): string {
  return (
    { PORT_NOP: 'Nop', PORT_DOWN: 'Down', PORT_INIT: 'Initializing', PORT_ARMED: 'Armed', PORT_ACTIVE: 'Active', PORT_ACTIVE_DEFER: 'Active (deferred)' } as const
  )[state];
}

/** Everything /v1/device says about the device itself (null fields when no device is open). */
export function describeDevice(device: Device | undefined) {
  if (!device) return { open: false as const };
  const attr = device.query();
  const ports = Array.from({ length: attr.physPortCnt }, (_, i) => {
    const port = i + 1;
    const p = device.queryPort(port);
    return {
      port,
      state: p.state,
      stateName: portStateName(p.state),
      physicalState: p.state === 'PORT_ACTIVE' ? 'LinkUp' : 'Disabled',
      linkLayer: 'Ethernet',
      activeMtu: p.activeMtu,
      maxMtu: p.maxMtu,
      maxMsgSize: p.maxMsgSz,
      gidTableLength: p.gidTblLen,
      pkeyTableLength: p.pkeyTblLen,
      qkeyViolations: p.qkeyViolCntr,
      badPkeys: p.badPkeyCntr,
      gids: port === 1 ? device.queryGidTable() : [],
    };
  });
  return {
    open: true as const,
    name: device.name,
    backend: device.backend,
    address: device.address,
    gid: device.gid,
    transport: 'RoCEv2 (UDP/4791)',
    firmwareVersion: attr.fwVer,
    nodeGuid: hex(attr.nodeGuid),
    vendorId: `0x${attr.vendorId.toString(16)}`,
    vendorPartId: attr.vendorPartId,
    physPortCount: attr.physPortCnt,
    limits: {
      maxQp: attr.maxQp,
      maxQpWr: attr.maxQpWr,
      maxSge: attr.maxSge,
      maxCq: attr.maxCq,
      maxCqe: attr.maxCqe,
      maxMr: attr.maxMr,
      maxMrSize: attr.maxMrSize.toString(),
      maxPd: attr.maxPd,
      maxQpRdAtom: attr.maxQpRdAtom,
      maxSrq: attr.maxSrq,
      maxMcastGroups: attr.maxMcastGrp,
      maxMcastQpAttach: attr.maxMcastQpAttach,
      maxAh: attr.maxAh,
      maxInlineData: attr.maxInlineData,
    },
    interface: device.interface,
    ports,
  };
}
