#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run): the network of the fault
# campaign, then its driver. Namespace qg-gw holds the gateway (gw0,
# 10.78.0.1), namespace qg-cl its clients (cl0: 10.78.0.2, and one address
# per soft device: .11-.13 the subscribers, .20 the order sessions); one veth
# pair joins them, and netem on both ends is what the driver changes. The
# multicast leaves by the device's address (IP_MULTICAST_IF, docs/protocol.md
# 1.1); the 224/4 routes say the same for anything else. Prints the driver's
# JSON line; campaign.test.ts asserts.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
modprobe veth
modprobe sch_netem
ip -batch - <<EOB
netns add qg-gw
netns add qg-cl
link add gw0 type veth peer name cl0
link set gw0 netns qg-gw
link set cl0 netns qg-cl
EOB
ip -n qg-gw -batch - <<EOB
link set lo up
addr add 10.78.0.1/24 dev gw0
link set gw0 up
route add 224.0.0.0/4 dev gw0
EOB
ip -n qg-cl -batch - <<EOB
link set lo up
addr add 10.78.0.2/24 dev cl0
addr add 10.78.0.11/24 dev cl0
addr add 10.78.0.12/24 dev cl0
addr add 10.78.0.13/24 dev cl0
addr add 10.78.0.20/24 dev cl0
link set cl0 up
route add 224.0.0.0/4 dev cl0
EOB
exec ip netns exec qg-cl env QPGATE_CAMPAIGN_GUEST=1 node "$root/dist/test/campaign/campaign-driver.js"
