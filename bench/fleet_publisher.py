"""A synthetic fleet on one MQTT connection: pre-encoded batches of many
producers, published on a schedule, with next to no CPU per message.

    python bench/fleet_publisher.py --mqtt-port P --project fleet --first 0 --producers 250 \\
        --keys 2 --steps-per-batch 20 --interval-ms 200 --batches 150

Every producer is a run (``<project>/f<index>``) with its own producer id and
seqs 1..batches. Its first batch carries the run's status ``running``, its
last one ``finished`` (naming its last seq), as a trainer's do. Batch ``k`` holds
steps ``k*S .. k*S+S-1`` of every key, their wall times spread over the
interval before the batch is published at ``t0 + (k+1) * interval``; values
from ``tests/paced_trainer.value_at``. All MQTT PUBLISH packets (QoS 1, packet
ids assigned in sending order) are encoded before the clock starts; the
process prints ``hello``, reads ``t0`` (ns since the epoch) from stdin,
encodes, connects, prints ``ready``, and then only writes bytes to the socket (a thread drains the broker's PUBACKs).
It prints ``late <seconds>`` at the end: how far behind its schedule it fell.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from curvestream_wire.topics import Topics
from curvestream_wire.v1 import batch_pb2, run_pb2

from paced_trainer import value_at

KEYS = ("loss", "acc", "lr", "grad_norm", "tokens_per_s", "mem", "ppl", "step_time")


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def mqtt_string(s: bytes) -> bytes:
    return struct.pack(">H", len(s)) + s


def connect_packet(client_id: str) -> bytes:
    body = mqtt_string(b"MQTT") + bytes([4, 0x02]) + struct.pack(">H", 60) + mqtt_string(client_id.encode())
    return b"\x10" + varint(len(body)) + body


def publish_packet(topic: bytes, packet_id: int, payload: bytes) -> bytes:
    body = mqtt_string(topic) + struct.pack(">H", packet_id) + payload
    return b"\x32" + varint(len(body)) + body


def encode_batches(project: str, index: int, keys: int, steps: int, batches: int, interval_ns: int,
                   t0: int) -> list[bytes]:
    pid = index.to_bytes(4, "big") + os.urandom(12)
    run = f"f{index}"
    out = []
    for k in range(batches):
        b = batch_pb2.Batch(version=1, producer_id=pid, seq=k + 1, project=project, run=run,
                            sealed_ns=t0 + (k + 1) * interval_ns, sent_ns=t0 + (k + 1) * interval_ns)
        base = t0 + k * interval_ns
        step0 = k * steps
        walls = [base + (i + 1) * interval_ns // steps for i in range(steps)]
        for j in range(keys):
            s = b.scalars.add(key=KEYS[j])
            s.steps.extend(range(step0, step0 + steps))
            s.wall_ns.extend(walls)
            s.values.extend(value_at(j, step0 + i) for i in range(steps))
        if k == 0 or k == batches - 1:
            state = run_pb2.RUN_STATE_RUNNING if k == 0 else run_pb2.RUN_STATE_FINISHED
            b.status.CopyFrom(run_pb2.RunStatus(project=project, run=run, state=state, updated_ns=b.sent_ns,
                                                producer_id=pid, last_seq=k + 1 if k else 0))
        out.append(b.SerializeToString())
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mqtt-port", type=int, required=True)
    parser.add_argument("--project", default="fleet")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--producers", type=int, required=True)
    parser.add_argument("--keys", type=int, default=2)
    parser.add_argument("--steps-per-batch", type=int, required=True)
    parser.add_argument("--interval-ms", type=float, default=200)
    parser.add_argument("--batches", type=int, required=True)
    args = parser.parse_args()
    interval_ns = int(args.interval_ms * 1e6)
    indices = range(args.first, args.first + args.producers)
    print("hello", flush=True)  # the wall times depend on t0: it comes first, the encoding after
    t0 = int(sys.stdin.readline())
    per_producer = [encode_batches(args.project, i, args.keys, args.steps_per_batch, args.batches, interval_ns, t0)
                    for i in indices]
    ticks: list[bytes] = []
    packet_id = 0
    for k in range(args.batches):
        packets = []
        for i, batches in zip(indices, per_producer):
            packet_id = packet_id % 65535 + 1
            packets.append(publish_packet(Topics.points(args.project, f"f{i}").encode(), packet_id, batches[k]))
        ticks.append(b"".join(packets))
    del per_producer
    packet_count = args.batches * len(indices)
    sock = socket.create_connection(("127.0.0.1", args.mqtt_port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(connect_packet(f"fleet-{args.project}-{args.first}-{os.getpid()}"))
    connack = sock.recv(4)
    if len(connack) < 4 or connack[0] != 0x20 or connack[3] != 0:
        raise SystemExit(f"fleet publisher: broker refused the connection: {connack!r}")
    acked = [0]  # bytes of PUBACK received (4 each)

    def drain() -> None:
        for data in iter(lambda: sock.recv(1 << 16), b""):
            acked[0] += len(data)

    threading.Thread(target=drain, daemon=True).start()
    print("ready", flush=True)
    late = 0.0
    for k, data in enumerate(ticks):
        due = (t0 + (k + 1) * interval_ns) / 1e9
        delay = due - time.time()
        if delay > 0:
            time.sleep(delay)
        else:
            late = max(late, -delay)
        sock.sendall(data)
    print(f"late {late:.3f}", flush=True)
    # closing with PUBACKs unread would reset the connection, and the broker could drop what it has not read yet
    deadline = time.monotonic() + 600
    while acked[0] < 4 * packet_count and time.monotonic() < deadline:
        time.sleep(0.05)
    sock.sendall(b"\xe0\x00")  # DISCONNECT
    sock.shutdown(socket.SHUT_WR)
    time.sleep(0.2)
    sock.close()


if __name__ == "__main__":
    main()
