#!/usr/bin/env python3
"""The events a `rtwhy record` session records, from its session.json, space-separated:
its flight instance's, and the context switches and wake-ups where its BPF programs keep
them instead (session.armed.sched_events, docs/recording.md), as a tracefs recorder
would need them. Used by the benchmarks to give their plain instance rtwhy's events.

Usage: scripts/recorded-events.py SESSION_JSON
"""
import json
import sys

armed = json.load(open(sys.argv[1]))["session"]["armed"]
events = armed["events"]
if armed.get("sched_events") == "bpf":
    events = ["sched:sched_switch", "sched:sched_waking"] + events
print(" ".join(events))
