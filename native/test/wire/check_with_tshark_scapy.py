#!/usr/bin/python3
"""Asks somebody else's decoders whether qpgate's RoCEv2 encoder is right.

Runs wire_pcap_writer, which encodes every opcode qpgate supports into a pcap
and writes the fields it meant to a JSON file, then:
  1. tshark (Wireshark's InfiniBand dissector) must read every field back as
     meant, with no malformed packet and no expert error;
  2. scapy recomputes the ICRC of every packet independently and it must equal
     ours: scapy.contrib.roce.BTH.compute_icrc for IPv4, and for IPv6 (which
     scapy's RoCE layer does not support) the same construction from scapy's
     IPv6/UDP/BTH layers with the IPv6 variant fields masked.

Run with Debian's /usr/bin/python3 (python3-scapy). Exit 0 = all agree.
usage: check_with_tshark_scapy.py --writer PATH --out-dir DIR
"""
import argparse
import json
import os
import subprocess
import sys
import zlib

EXPERT_ERROR = 0x00800000  # _ws.expert.severity of PI_ERROR


def fail(msg):
    print("FAIL: " + msg)
    return 1


def num(s):
    if isinstance(s, bool):
        return int(s)
    s = str(s)
    if s in ("True", "true"):
        return 1
    if s in ("False", "false"):
        return 0
    return int(s, 0)


def colon_hex_to_int(s):
    return int(s.replace(":", ""), 16)


class Obj(list):
    """A JSON object as its (key, value) pairs: tshark repeats keys."""


def flatten(tree, out):
    """Collects every (key, scalar) of a tshark JSON tree into key -> [values]."""
    if isinstance(tree, Obj):
        for k, v in tree:
            if isinstance(v, (Obj, list)) and not (
                    isinstance(v, list) and not isinstance(v, Obj)
                    and all(not isinstance(x, list) for x in v)):
                flatten(v, out)
            elif isinstance(v, list):
                out.setdefault(k, []).extend(v)
            else:
                out.setdefault(k, []).append(v)
    elif isinstance(tree, list):
        for x in tree:
            flatten(x, out)


def tshark_frames(pcap):
    out = subprocess.run(
        ["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband",
          # Wireshark's payload heuristics (RPC-over-RDMA, NVMe-oF, Mellanox
         # EoIB) try our opaque test payloads and throw on 0-3 byte SENDs and
         # an empty UD SEND; they judge the payload, not the RoCE headers.
         "--disable-protocol", "rpcordma", "--disable-protocol", "nvme-rdma",
         "--disable-protocol", "infiniband.eoib",
         "-T", "json"],
        check=True, capture_output=True, text=True).stdout
    frames = json.loads(out, object_pairs_hook=Obj)
    result = []
    for f in frames:
        flat = {}
        flatten(f, flat)
        result.append(flat)
    return result


def check_tshark(pcap, meant):
    errors = 0
    frames = tshark_frames(pcap)
    if len(frames) != len(meant):
        return fail("tshark read %d frames, we wrote %d" % (len(frames), len(meant)))
    for m, f in zip(meant, frames):
        where = "frame %d %s (IPv%d)" % (m["frame"], m["name"], m["ip"])

        def expect(field, want, conv=num):
            nonlocal errors
            got = f.get(field)
            if not got:
                errors += fail("%s: tshark shows no %s (want %r)" % (where, field, want))
                return
            val = conv(got[0])
            if val != want:
                errors += fail("%s: %s = %r, we meant %r" % (where, field, val, want))

        if "_ws.malformed" in f or any(k.startswith("_ws.malformed") for k in f):
            errors += fail("%s: tshark says malformed" % where)
        for sev in f.get("_ws.expert.severity", []):
            if num(sev) >= EXPERT_ERROR:
                errors += fail("%s: tshark expert error: %s" % (where, f.get("_ws.expert.message")))
        expect("infiniband.bth.opcode", m["opcode"])
        expect("infiniband.bth.psn", m["psn"])
        expect("infiniband.bth.destqp", m["dest_qpn"])
        expect("infiniband.bth.a", m["ack_req"])
        expect("infiniband.bth.se", m["solicited"])
        expect("infiniband.bth.p_key", m["pkey"])
        expect("infiniband.bth.padcnt", m["pad"])
        expect("infiniband.bth.tver", 0)
        if "qkey" in m:
            expect("infiniband.deth.q_key", m["qkey"])
            expect("infiniband.deth.srcqp", m["src_qpn"])
        if "reth_va" in m:
            expect("infiniband.reth.va", m["reth_va"])
            expect("infiniband.reth.r_key", m["reth_rkey"])
            expect("infiniband.reth.dmalen", m["reth_dma_len"])
        if "atomic_va" in m:
            # Wireshark labels the AtomicETH VA and R_Key with the RETH field names.
            expect("infiniband.reth.va", m["atomic_va"])
            expect("infiniband.reth.r_key", m["atomic_rkey"])
            expect("infiniband.atomiceth.swapdt", m["atomic_swap_add"])
            expect("infiniband.atomiceth.cmpdt", m["atomic_compare"])
        if "syndrome" in m:
            expect("infiniband.aeth.syndrome", m["syndrome"])
            expect("infiniband.aeth.msn", m["msn"])
        if "orig_remote_data" in m:
            expect("infiniband.atomicacketh.origremdt", m["orig_remote_data"])
        if "imm" in m:
            expect("infiniband.immdt", m["imm"], colon_hex_to_int)
        if m["name"] == "CNP":
            # Wireshark does not know opcode 0x81: it shows the 16 reserved
            # bytes and the ICRC as one vendor-specific blob.
            blob = bytes(16) + m["icrc"].to_bytes(4, "little")
            shown = [bytes.fromhex(v.replace(":", "")) for v in f.get("infiniband.vendor", [])]
            if blob not in shown:
                errors += fail("%s: vendor data %s, we meant %s" % (where, shown, blob.hex()))
            continue
        # Wireshark shows the ICRC as the big-endian number of its 4 bytes;
        # ours is stored little-endian (rxe's CPU-order crc32_le).
        expect("infiniband.invariant.crc", int.from_bytes(m["icrc"].to_bytes(4, "little"), "big"))
        # Payload and pad: Wireshark hands both to the data dissector.
        want_payload = bytes.fromhex(m["payload"]) + b"\0" * m["pad"]
        got = f.get("data.data") or f.get("infiniband.payload") or [""]
        got_bytes = bytes.fromhex(got[0].replace(":", ""))
        if got_bytes != want_payload:
            errors += fail("%s: payload %s, we meant %s" % (where, got_bytes.hex(), want_payload.hex()))
    print("tshark: %d frames checked, %d problems" % (len(frames), errors))
    return errors


def icrc_ipv6_from_scapy_layers(pkt):
    """The RoCEv2 ICRC of an IPv6 packet, built like scapy's IPv4 compute_icrc."""
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.packet import Raw
    from scapy.compat import raw
    from scapy.contrib.roce import BTH
    ip = pkt[IPv6].copy()
    ip.tc = 0xff
    ip.fl = 0xfffff
    ip.hlim = 0xff
    ip[UDP].chksum = 0xffff
    ip[BTH].fecn = 1
    ip[BTH].becn = 1
    ip[BTH].resv6 = 0x3f
    bth = ip[BTH].self_build()
    payload = raw(ip[BTH].payload)
    ip[UDP].payload = Raw(bth + payload + b"\xff\xff\xff\xff")
    data = b"\xff" * 8 + raw(ip)[:-4]
    return (zlib.crc32(data) & 0xffffffff).to_bytes(4, "little")


def check_scapy(pcap, meant):
    from scapy.all import rdpcap
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.contrib.roce import BTH
    errors = 0
    v4 = v6 = 0
    for m, pkt in zip(meant, rdpcap(pcap)):
        where = "frame %d %s (IPv%d)" % (m["frame"], m["name"], m["ip"])
        wire_icrc = bytes(pkt)[-4:]
        if BTH not in pkt:
            errors += fail("%s: scapy does not see a BTH" % where)
            continue
        if IP in pkt:
            theirs = pkt[BTH].compute_icrc(None)
            v4 += 1
            # Our IPv6 construction must agree with scapy's own on IPv4 too.
            if m["ip"] != 4:
                errors += fail("%s: scapy sees IPv4" % where)
        elif IPv6 in pkt:
            theirs = icrc_ipv6_from_scapy_layers(pkt)
            v6 += 1
        else:
            errors += fail("%s: neither IPv4 nor IPv6" % where)
            continue
        if theirs != wire_icrc:
            errors += fail("%s: scapy ICRC %s, ours %s" % (where, theirs.hex(), wire_icrc.hex()))
        if wire_icrc != m["icrc"].to_bytes(4, "little"):
            errors += fail("%s: ICRC on the wire differs from the JSON" % where)
    if v4 == 0 or v6 == 0:
        errors += fail("need both IPv4 (%d) and IPv6 (%d) packets" % (v4, v6))
    print("scapy: %d IPv4 + %d IPv6 ICRCs recomputed, %d problems" % (v4, v6, errors))
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writer", required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    pcap = os.path.join(args.out_dir, "wire_all_opcodes.pcap")
    meant_path = os.path.join(args.out_dir, "wire_all_opcodes.json")
    subprocess.run([args.writer, pcap, meant_path], check=True)
    with open(meant_path) as f:
        meant = json.load(f)
    errors = check_tshark(pcap, meant) + check_scapy(pcap, meant)
    if errors:
        print("%d disagreements between qpgate's encoder and tshark/scapy" % errors)
        return 1
    print("tshark and scapy agree with every one of %d packets" % len(meant))
    return 0


if __name__ == "__main__":
    sys.exit(main())
