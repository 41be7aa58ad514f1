// What to change when an ibv device will not open, for the gateway (its
// backend.* keys) and the clients (their --device, --ib-port, --gid-index
// flags) alike: src/gateway/device/device.ts and src/client/control-client.ts.

/** Where the device, port and GID entry are chosen: the gateway's config keys, or a client's flags. */
export interface IbvChoices {
  device: string;
  port: string;
  gidIndex: string;
}

/** What to change for each way an ibv device fails to open (ibv_device.cc open_ibv_device). */
export function ibvFix(code: string | undefined, message: string, at: IbvChoices): string {
  if (code === 'EOPNOTSUPP' && /no ibv backend/.test(message)) return 'install libibverbs-dev and rebuild: npm run build:native';
  if (code === 'ENOSYS') return 'this kernel has no RDMA: load a driver, e.g. modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0';
  if (code === 'ENODEV' && /no RDMA device/.test(message)) return `set ${at.device} to one of the devices listed`;
  if (code === 'ENETDOWN') return `bring the port up: ip link set <netdev> up (rdma link shows the netdev), or choose an ACTIVE one with ${at.port}`;
  if (code === 'EINVAL' && /GID|gid/.test(message)) return `set ${at.gidIndex} to a RoCE v2 IPv4 entry, or unset it`;
  if (code === 'ENODEV') return `give the device an IPv4 address on its interface, or set ${at.gidIndex}`;
  return `check ${at.device} and ${at.port}`;
}
