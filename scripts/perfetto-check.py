#!/usr/bin/env python3
"""Checks an `rtwhy convert` output against trace-cmd, with Perfetto's own schema.

Compiles perfetto's protos/perfetto/trace/trace.proto (from a perfetto checkout) with
protoc from grpcio-tools, decodes the converted file packet by packet with the
`protobuf` package, and compares every ftrace event with the lines `trace-cmd report -R`
prints for the same trace.dat: CPU, timestamp (to trace-cmd's microsecond), pid, event
name, and for the scheduler, IRQ, softirq, hrtimer, idle, frequency and workqueue events
every field. Both sides are streamed, so a 1 GiB trace is checked in bounded memory
(events are compared per CPU; ties within a CPU may come in another order).

Needs: pip install protobuf grpcio-tools; trace-cmd; a perfetto checkout (protos/).
Usage: scripts/perfetto-check.py --perfetto DIR TRACE.dat OUT.perfetto-trace
Exit 0 when every event matches, 1 otherwise.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

# Fields compared for the typed events, by trace-cmd's (and Perfetto's) field name.
# Callback addresses (`function`) are left out: trace-cmd prints them as symbol names.
TYPED = {
    "sched_switch": ["prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"],
    "sched_waking": ["comm", "pid", "prio", "target_cpu"],
    "sched_wakeup": ["comm", "pid", "prio", "target_cpu"],
    "sched_wakeup_new": ["comm", "pid", "prio", "target_cpu"],
    "sched_migrate_task": ["comm", "pid", "prio", "orig_cpu", "dest_cpu"],
    "sched_pi_setprio": ["comm", "pid", "oldprio", "newprio"],
    "irq_handler_entry": ["irq", "name"],
    "irq_handler_exit": ["irq", "ret"],
    "softirq_entry": ["vec"],
    "softirq_exit": ["vec"],
    "softirq_raise": ["vec"],
    "hrtimer_start": ["hrtimer", "expires", "softexpires"],
    "hrtimer_expire_entry": ["hrtimer", "now"],
    "hrtimer_expire_exit": ["hrtimer"],
    "hrtimer_cancel": ["hrtimer"],
    "cpu_idle": ["state", "cpu_id"],
    "cpu_frequency": ["state", "cpu_id"],
    "workqueue_execute_start": ["work"],
    "workqueue_execute_end": ["work"],
}

LINE = re.compile(r"^(?:.*?: )?\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+([^:\s]+):\s?(.*)$")
KEY = re.compile(r"(?:^| )([A-Za-z_][A-Za-z0-9_]*)=")
MASK = (1 << 64) - 1


def norm(v):
    """A value as compared: integers as unsigned 64-bit, anything else as text."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v & MASK
    s = str(v)
    try:
        return (int(s, 16) if s.startswith("0x") else int(s)) & MASK
    except ValueError:
        return s


def raw_fields(args):
    """`key=value ...` of a `trace-cmd report -R` line; values run to the next key."""
    keys = list(KEY.finditer(args))
    out = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(args)
        out[m.group(1)] = args[m.end():end].strip()
    return out


def tracecmd_events(dat):
    proc = subprocess.Popen(["trace-cmd", "report", "-R", dat], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, errors="replace",
                            bufsize=1 << 20)
    for line in proc.stdout:
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        _, pid, cpu, secs, usecs, name, args = m.groups()
        key = (int(cpu), int(secs) * 1_000_000 + int(usecs), int(pid), name)
        fields = ()
        if name in TYPED:
            f = raw_fields(args)
            fields = tuple(norm(f.get(k, "?")) for k in TYPED[name])
        yield int(cpu), key + fields
    proc.wait()


def perfetto_events(path, Trace, TracePacket):
    with open(path, "rb") as f:
        data = f.read(1 << 20)
        pos = 0
        eof = False

        def need(n):
            nonlocal data, pos, eof
            while len(data) - pos < n and not eof:
                more = f.read(1 << 20)
                if not more:
                    eof = True
                    break
                data = data[pos:] + more
                pos = 0
            return len(data) - pos >= n

        def varint():
            nonlocal pos
            v, shift = 0, 0
            while True:
                if not need(1):
                    raise ValueError("truncated varint")
                b = data[pos]
                pos += 1
                v |= (b & 0x7F) << shift
                if not b & 0x80:
                    return v
                shift += 7

        while need(1):
            key = varint()
            if key != (1 << 3 | 2):
                raise ValueError(f"not a Trace.packet field: key {key}")
            n = varint()
            if not need(n):
                raise ValueError("truncated packet")
            packet = TracePacket.FromString(data[pos:pos + n])
            pos += n
            yield packet


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--perfetto", required=True, help="a perfetto checkout (its protos/ directory is used)")
    ap.add_argument("dat")
    ap.add_argument("converted")
    a = ap.parse_args()

    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        desc = os.path.join(tmp, "trace.desc")
        rc = protoc.main(["protoc", f"-I{a.perfetto}", "--include_imports",
                          f"--descriptor_set_out={desc}", "protos/perfetto/trace/trace.proto"])
        if rc != 0:
            sys.exit(f"protoc failed on {a.perfetto}/protos/perfetto/trace/trace.proto")
        fds = descriptor_pb2.FileDescriptorSet.FromString(open(desc, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    Trace = message_factory.GetMessageClass(pool.FindMessageTypeByName("perfetto.protos.Trace"))
    TracePacket = message_factory.GetMessageClass(pool.FindMessageTypeByName("perfetto.protos.TracePacket"))

    diff = collections.defaultdict(collections.Counter)
    counts = collections.Counter()
    names = collections.Counter()
    slices = 0
    tc = tracecmd_events(a.dat)
    tc_done = False
    worst = 0

    def take(cpu, item, sign):
        d = diff[cpu]
        d[item] += sign
        if d[item] == 0:
            del d[item]

    for packet in perfetto_events(a.converted, Trace, TracePacket):
        if packet.HasField("track_event") and packet.track_event.type == 1:
            slices += 1
        if not packet.HasField("ftrace_events"):
            continue
        bundle = packet.ftrace_events
        for ev in bundle.event:
            member = ev.WhichOneof("event")
            body = getattr(ev, member)
            name = body.event_name if member == "generic" else member
            names["generic" if member == "generic" else "typed"] += 1
            ts = ev.timestamp
            key = (bundle.cpu, ts // 1000 + (1 if ts % 1000 >= 500 else 0), ev.pid, name)
            if name in TYPED and member != "generic":
                key += tuple(norm(getattr(body, k)) for k in TYPED[name])
            take(bundle.cpu, key, 1)
            counts["perfetto"] += 1
        while not tc_done and counts["tracecmd"] < counts["perfetto"]:
            try:
                cpu, item = next(tc)
            except StopIteration:
                tc_done = True
                break
            take(cpu, item, -1)
            counts["tracecmd"] += 1
        worst = max(worst, sum(len(d) for d in diff.values()))
    for cpu, item in tc:
        take(cpu, item, -1)
        counts["tracecmd"] += 1
    bad = [(cpu, item, n) for cpu, d in diff.items() for item, n in d.items()]
    print(f"perfetto events {counts['perfetto']} ({names['typed']} typed, {names['generic']} generic), "
          f"trace-cmd events {counts['tracecmd']}, spike slices {slices}, "
          f"largest pending difference {worst}")
    if bad:
        print(f"{len(bad)} events differ (+n: only in the Perfetto trace, -n: only in trace-cmd's), first 10:")
        for b in sorted(bad, key=lambda x: x[1][:2])[:10]:
            print("  ", b)
        return 1
    print("every event matches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
