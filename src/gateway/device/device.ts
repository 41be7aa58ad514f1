// The gateway's verbs device: opened after the engine starts, closed before
// it stops, and described the way `ibv_devinfo` / `ibstat` describe one.
import type { GatewayConfig } from '../config/schema.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDevice, type Device, type OpenIbvDeviceOptions, type PortAttr } from '../../native/verbs.js';
import type { Engine } from '../../native/engine.js';
import { ibvFix, type IbvChoices } from '../../native/ibv-fix.js';

/** The device could not be opened as configured: `qpgate serve` exits 2 (a configuration error), nothing started. */
export class DeviceOpenError extends Error {
  override readonly name = 'DeviceOpenError';
}

/** Opens the configured backend's device on the engine. Throws a one-line DeviceOpenError naming the fix when it cannot. */
export function openGatewayDevice(config: GatewayConfig, engine: Engine): Device {
  const { backend } = config;
  return backend.kind === 'ibv' ? openIbv(backend, engine) : openSoft(backend, engine);
}

function openSoft(backend: GatewayConfig['backend'], engine: Engine): Device {
  const alternate = backend.alternateAddress;
  if (alternate === backend.address) {
    throw new DeviceOpenError(`backend.alternateAddress ${alternate} is backend.address: give a second address of this host (another link), or leave it unset`);
  }
  try {
    return openDevice(engine, { kind: 'soft', address: backend.address, ...(alternate !== undefined ? { alternateAddress: alternate } : {}) });
  } catch (err) {
    const e = err as Error & { code?: string };
    // The native error names the alternate address's sockets ("soft device alternate address: ...").
    const key = alternate !== undefined && /alternate/.test(e.message) ? 'backend.alternateAddress' : 'backend.address';
    const named = key === 'backend.address' ? backend.address : alternate;
    const why =
      e.code === 'EADDRINUSE'
        ? `another soft device (in this or another process) owns ${named}:4791`
        : e.code === 'EADDRNOTAVAIL'
          ? `no interface has the address ${named}`
          : e.message;
    throw new DeviceOpenError(`cannot open the soft device on ${backend.address}: ${why} (${key})`, { cause: err });
  }
}

const CONFIG_KEYS: IbvChoices = { device: 'backend.device', port: 'backend.port', gidIndex: 'backend.gidIndex' };
const ALTERNATE_KEYS: IbvChoices = { device: 'backend.alternateDevice', port: 'backend.port', gidIndex: 'backend.gidIndex' };

/**
 * backend.alternateDevice (ibv): the second RDMA device trading and risk
 * sessions may open on, port 1, its RoCE v2 IPv4-mapped GID chosen as the
 * primary's is; undefined when unset. Throws a one-line DeviceOpenError.
 */
export function openAlternateDevice(config: GatewayConfig, engine: Engine): Device | undefined {
  const name = config.backend.alternateDevice;
  if (config.backend.kind !== 'ibv' || name === undefined) return undefined;
  // Each feed's line B leaves from it: it must do multicast too.
  return withMulticast(openIbvDevice(engine, { kind: 'ibv', name, port: 1 }, 'the alternate ibv device', ALTERNATE_KEYS));
}

function openIbv(backend: GatewayConfig['backend'], engine: Engine): Device {
  if (backend.alternateAddress !== undefined) {
    // The kernel refuses IBV_QP_ALT_PATH on a RoCE port (docs/protocol.md §1.11).
    throw new DeviceOpenError(
      `backend.alternateAddress ${backend.alternateAddress}: the ibv backend has no automatic path migration (Linux's RDMA core refuses an alternate path on a RoCE port); give a second RDMA device as backend.alternateDevice (clients fail over to it), or use backend.kind 'soft'`,
    );
  }
  const options = { kind: 'ibv' as const, name: backend.device, port: backend.port, gidIndex: backend.gidIndex };
  return withMulticast(openIbvDevice(engine, options, 'the ibv device', CONFIG_KEYS));
}

/** openDevice for ibv, its failure a DeviceOpenError saying what to fix (`keys`: the config keys that name it). */
function openIbvDevice(engine: Engine, options: OpenIbvDeviceOptions, what: string, keys: IbvChoices): Device {
  try {
    return openDevice(engine, options);
  } catch (err) {
    const e = err as Error & { code?: string };
    throw new DeviceOpenError(`cannot open ${what} ${options.name}: ${e.message} (${ibvFix(e.code, e.message, keys)})`, { cause: err });
  }
}

/** The feed is UD multicast: a device that attaches no group cannot serve it (closed, and a DeviceOpenError). */
function withMulticast(device: Device): Device {
  const attr = device.query();
  if (attr.maxMcastGrp === 0 || attr.maxMcastQpAttach === 0) {
    const name = device.name;
    device.close();
    throw new DeviceOpenError(`cannot serve on the ibv device ${name}: it has no multicast (max_mcast_grp ${attr.maxMcastGrp}; choose a RoCE device that has)`);
  }
  return device;
}

/**
 * The device's own counters (ibv: sysfs hw_counters, what `rdma statistic`
 * shows; rxe has sent_pkts, rcvd_pkts, ...). Empty for the soft device,
 * whose counters come from device.counters().
 */
export function hwCounters(device: Device | undefined): Record<string, number> {
  if (device?.backend !== 'ibv') return {};
  const dir = `/sys/class/infiniband/${device.name}/ports/${device.port}/hw_counters`;
  const out: Record<string, number> = {};
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;  // a driver without hw_counters
  }
  for (const name of names) {
    const v = Number(readFileSync(join(dir, name), 'utf8').trim());
    if (Number.isFinite(v)) out[name] = v;
  }
  return out;
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
      gids: port === device.port ? device.queryGidTable() : [],
    };
  });
  return {
    open: true as const,
    name: device.name,
    backend: device.backend,
    address: device.address,
    gid: device.gid,
    gidIndex: device.gidIndex,
    gidReport: device.gidReport,
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
