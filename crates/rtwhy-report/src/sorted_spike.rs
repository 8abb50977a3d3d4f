//! A spike serialized with the keys of every object in sorted order: the bytes
//! `serde_json::to_value` then printing would give (its maps sort their keys), written
//! straight from the model without building that tree. Each type is taken apart by an
//! exhaustive pattern, so a field or variant added to the model does not compile here
//! until it is placed in its order.

use rtwhy_model::{
    BreakdownItem, Bucket, Evidence, Finding, LateTimer, PiBoost, Spike, SpikeSource, TaskRef,
};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// A model value serialized with sorted keys.
pub(crate) struct Sorted<'a, T>(pub(crate) &'a T);

/// A list of model values, each serialized with sorted keys.
struct SortedList<'a, T>(&'a [T]);

impl<'a, T> Serialize for SortedList<'a, T>
where
    Sorted<'a, T>: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Sorted))
    }
}

/// `Some` as its value, `None` as `null`, each with sorted keys.
struct SortedOption<'a, T>(Option<&'a T>);

impl<'a, T> Serialize for SortedOption<'a, T>
where
    Sorted<'a, T>: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(v) => Sorted(v).serialize(s),
            None => s.serialize_none(),
        }
    }
}

impl Serialize for Sorted<'_, Spike> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Spike {
            id,
            victim,
            cpu,
            kind,
            source,
            start,
            end,
            latency_ns,
            end_inferred,
            waker,
            primary,
            contributors,
            breakdown,
            evidence,
            remediation,
            missing,
        } = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("breakdown", &SortedList(breakdown))?;
        m.serialize_entry("contributors", &SortedList(contributors))?;
        m.serialize_entry("cpu", cpu)?;
        m.serialize_entry("end", end)?;
        m.serialize_entry("end_inferred", end_inferred)?;
        m.serialize_entry("evidence", &SortedList(evidence))?;
        m.serialize_entry("id", id)?;
        m.serialize_entry("kind", kind)?;
        m.serialize_entry("latency_ns", latency_ns)?;
        m.serialize_entry("missing", missing)?;
        m.serialize_entry("primary", &Sorted(primary))?;
        m.serialize_entry("remediation", remediation)?;
        m.serialize_entry("source", &Sorted(source))?;
        m.serialize_entry("start", start)?;
        m.serialize_entry("victim", &Sorted(victim))?;
        m.serialize_entry("waker", &SortedOption(waker.as_ref()))?;
        m.end()
    }
}

impl Serialize for Sorted<'_, TaskRef> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let TaskRef {
            tid,
            comm,
            prio,
            boost,
        } = self.0;
        let mut m = s.serialize_map(None)?;
        if let Some(b) = boost {
            m.serialize_entry("boost", &Sorted(b))?;
        }
        m.serialize_entry("comm", comm)?;
        m.serialize_entry("prio", prio)?;
        m.serialize_entry("tid", tid)?;
        m.end()
    }
}

impl Serialize for Sorted<'_, PiBoost> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let PiBoost {
            own_prio,
            by_tid,
            by_comm,
        } = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("by_comm", by_comm)?;
        m.serialize_entry("by_tid", by_tid)?;
        m.serialize_entry("own_prio", own_prio)?;
        m.end()
    }
}

impl Serialize for Sorted<'_, SpikeSource> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self.0 {
            SpikeSource::BreachMarker {
                reported_ns,
                late_timer,
            } => {
                m.serialize_entry("kind", "breach_marker")?;
                if let Some(t) = late_timer {
                    m.serialize_entry("late_timer", &Sorted(t))?;
                }
                m.serialize_entry("reported_ns", reported_ns)?;
            }
            SpikeSource::ToolMarker { text, reported_ns } => {
                m.serialize_entry("kind", "tool_marker")?;
                m.serialize_entry("reported_ns", reported_ns)?;
                m.serialize_entry("text", text)?;
            }
            SpikeSource::Events => m.serialize_entry("kind", "events")?,
        }
        m.end()
    }
}

impl Serialize for Sorted<'_, LateTimer> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let LateTimer {
            late_ns,
            interrupted,
        } = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("interrupted", interrupted)?;
        m.serialize_entry("late_ns", late_ns)?;
        m.end()
    }
}

impl Serialize for Sorted<'_, Finding> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Finding {
            cause,
            confidence,
            share,
            summary,
            culprit,
        } = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("cause", cause)?;
        m.serialize_entry("confidence", confidence)?;
        if let Some(c) = culprit {
            m.serialize_entry("culprit", c)?;
        }
        m.serialize_entry("share", share)?;
        m.serialize_entry("summary", summary)?;
        m.end()
    }
}

impl Serialize for Sorted<'_, Evidence> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Evidence { ts, cpu, line, why } = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("cpu", cpu)?;
        m.serialize_entry("line", line)?;
        m.serialize_entry("ts", ts)?;
        m.serialize_entry("why", why)?;
        m.end()
    }
}

/// The bucket's fields flattened beside `ns`, its variant under `bucket`.
impl Serialize for Sorted<'_, BreakdownItem> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let BreakdownItem { bucket, ns } = self.0;
        let mut m = s.serialize_map(None)?;
        match bucket {
            Bucket::Irq { irq, name } => {
                m.serialize_entry("bucket", bucket_name(bucket))?;
                m.serialize_entry("irq", irq)?;
                m.serialize_entry("name", name)?;
                m.serialize_entry("ns", ns)?;
            }
            Bucket::Softirq {
                vec,
                context,
                thread,
            } => {
                m.serialize_entry("bucket", bucket_name(bucket))?;
                m.serialize_entry("context", context)?;
                m.serialize_entry("ns", ns)?;
                if let Some(t) = thread {
                    m.serialize_entry("thread", &Sorted(t))?;
                }
                m.serialize_entry("vec", vec)?;
            }
            Bucket::IrqThread {
                irq,
                name,
                thread,
                outranks_victim,
                equals_victim,
            } => {
                m.serialize_entry("bucket", bucket_name(bucket))?;
                if *equals_victim {
                    m.serialize_entry("equals_victim", equals_victim)?;
                }
                m.serialize_entry("irq", irq)?;
                m.serialize_entry("name", name)?;
                m.serialize_entry("ns", ns)?;
                m.serialize_entry("outranks_victim", outranks_victim)?;
                m.serialize_entry("thread", &Sorted(thread))?;
            }
            Bucket::Task {
                tid,
                comm,
                prio,
                outranks_victim,
                equals_victim,
                kernel_thread,
                boost,
            } => {
                if let Some(b) = boost {
                    m.serialize_entry("boost", &Sorted(b))?;
                }
                m.serialize_entry("bucket", bucket_name(bucket))?;
                m.serialize_entry("comm", comm)?;
                if *equals_victim {
                    m.serialize_entry("equals_victim", equals_victim)?;
                }
                m.serialize_entry("kernel_thread", kernel_thread)?;
                m.serialize_entry("ns", ns)?;
                m.serialize_entry("outranks_victim", outranks_victim)?;
                m.serialize_entry("prio", prio)?;
                m.serialize_entry("tid", tid)?;
            }
            Bucket::LockWait { holder } => {
                m.serialize_entry("bucket", bucket_name(bucket))?;
                m.serialize_entry("holder", &SortedOption(holder.as_ref()))?;
                m.serialize_entry("ns", ns)?;
            }
            Bucket::Dropped { count } => {
                m.serialize_entry("bucket", bucket_name(bucket))?;
                m.serialize_entry("count", count)?;
                m.serialize_entry("ns", ns)?;
            }
            Bucket::TimerIrqDelay
            | Bucket::Idle
            | Bucket::LockRequest
            | Bucket::Unaccounted
            | Bucket::NotRecorded
            | Bucket::Victim
            | Bucket::VictimRan
            | Bucket::Unplaced => {
                m.serialize_entry("bucket", bucket_name(bucket))?;
                m.serialize_entry("ns", ns)?;
            }
        }
        m.end()
    }
}

/// The `bucket` tag of each variant.
fn bucket_name(b: &Bucket) -> &'static str {
    match b {
        Bucket::TimerIrqDelay => "timer_irq_delay",
        Bucket::Irq { .. } => "irq",
        Bucket::Softirq { .. } => "softirq",
        Bucket::IrqThread { .. } => "irq_thread",
        Bucket::Task { .. } => "task",
        Bucket::Idle => "idle",
        Bucket::LockRequest => "lock_request",
        Bucket::LockWait { .. } => "lock_wait",
        Bucket::Unaccounted => "unaccounted",
        Bucket::Dropped { .. } => "dropped",
        Bucket::NotRecorded => "not_recorded",
        Bucket::Victim => "victim",
        Bucket::VictimRan => "victim_ran",
        Bucket::Unplaced => "unplaced",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{Cause, Comm, Confidence, Nanos, SoftirqContext, SpikeKind};

    fn task(tid: i32, boost: bool) -> TaskRef {
        TaskRef {
            tid,
            comm: Comm::new("irq/41-virtio\"8"),
            prio: (tid % 2 == 0).then_some(49),
            boost: boost.then(|| PiBoost {
                own_prio: 120,
                by_tid: 7,
                by_comm: Comm::new("waiter"),
            }),
        }
    }

    fn finding(cause: Cause, culprit: Option<&str>) -> Finding {
        Finding {
            cause,
            confidence: Confidence::Medium,
            share: 0.123_456_789,
            summary: "two\nlines \u{1} and \"quotes\"".to_string(),
            culprit: culprit.map(str::to_string),
        }
    }

    /// Every variant of the bucket, with and without its optional fields.
    fn every_bucket() -> Vec<Bucket> {
        let task_bucket = |equals_victim, boost: Option<PiBoost>| Bucket::Task {
            tid: 12,
            comm: Comm::new("spin"),
            prio: 9,
            outranks_victim: true,
            equals_victim,
            kernel_thread: false,
            boost,
        };
        let irq_thread = |equals_victim| Bucket::IrqThread {
            irq: 41,
            name: "virtio8".to_string(),
            thread: task(99, false),
            outranks_victim: false,
            equals_victim,
        };
        let softirq = |thread| Bucket::Softirq {
            vec: 3,
            context: SoftirqContext::Thread,
            thread,
        };
        vec![
            Bucket::TimerIrqDelay,
            Bucket::Irq {
                irq: -1,
                name: "timer".to_string(),
            },
            softirq(None),
            softirq(Some(task(14, true))),
            irq_thread(false),
            irq_thread(true),
            task_bucket(false, None),
            task_bucket(true, task(3, true).boost),
            Bucket::Idle,
            Bucket::LockRequest,
            Bucket::LockWait { holder: None },
            Bucket::LockWait {
                holder: Some(task(5, true)),
            },
            Bucket::Unaccounted,
            Bucket::Dropped { count: 42 },
            Bucket::NotRecorded,
            Bucket::Victim,
            Bucket::VictimRan,
            Bucket::Unplaced,
        ]
    }

    fn spike(source: SpikeSource, waker: Option<TaskRef>) -> Spike {
        Spike {
            id: 3,
            victim: task(10, false),
            cpu: 1,
            kind: SpikeKind::TimerWakeup,
            source,
            start: Nanos(1000),
            end: Nanos(5000),
            latency_ns: 4000,
            end_inferred: true,
            waker,
            primary: finding(Cause::Softirq, Some("NET_RX on CPU 1")),
            contributors: vec![finding(Cause::Irq, None), finding(Cause::Unknown, None)],
            breakdown: every_bucket()
                .into_iter()
                .map(|bucket| BreakdownItem { bucket, ns: 17 })
                .collect(),
            evidence: vec![Evidence {
                ts: Nanos(1500),
                cpu: 1,
                line: "a-1 [001] 0.000001500: irq_handler_entry: irq=41".to_string(),
                why: "why".to_string(),
            }],
            remediation: vec!["isolate".to_string()],
            missing: Vec::new(),
        }
    }

    #[test]
    fn sorted_keys_print_as_the_json_value_of_the_spike_does() {
        let sources = [
            SpikeSource::Events,
            SpikeSource::ToolMarker {
                text: "hit latency threshold (120 > 100)".to_string(),
                reported_ns: 120_000,
            },
            SpikeSource::BreachMarker {
                reported_ns: 5,
                late_timer: None,
            },
            SpikeSource::BreachMarker {
                reported_ns: 5,
                late_timer: Some(LateTimer {
                    late_ns: 4,
                    interrupted: vec!["f+0x1".to_string()],
                }),
            },
        ];
        for (i, source) in sources.into_iter().enumerate() {
            let s = spike(source, (i % 2 == 0).then(|| task(8, true)));
            let via_value = serde_json::to_value(&s).unwrap();
            assert_eq!(
                serde_json::to_string_pretty(&Sorted(&s)).unwrap(),
                serde_json::to_string_pretty(&via_value).unwrap()
            );
        }
    }
}
