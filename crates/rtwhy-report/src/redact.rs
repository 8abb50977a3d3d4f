//! Redaction of a report for posting in public (`rtwhy report --redact`): what a careful
//! kernel developer takes out of a trace before pasting it into a public thread.
//!
//! One [`Redactor`] serves every file of one report, so a value gets the same stand-in
//! in the Markdown, the JSON, the pictures and the trace window:
//! - kernel addresses become `0x5afe` followed by eight hex digits of a hash keyed per
//!   report (the same address, the same token; another report, another token), or, for
//!   an address inside a kernel symbol, a place in a made-up symbol table where the
//!   symbol keeps its name and the address its offset;
//! - host names, IPv4/IPv6 and MAC addresses, UUIDs and the user names of home
//!   directories become `host-N`, `ip-N`, `mac-N`, `uuid-N` and `user-N`;
//! - the kernel command line keeps only the parameters rtwhy reads or a real-time
//!   reader asks about, and says how many others it dropped;
//! - task names that play no part in a reported spike become `task-N` (victims,
//!   culprits, wakers, lock holders and kernel threads keep theirs).
//!
//! The redactor does no I/O: the caller gives it the key, the names to look for and the
//! trace's symbol table.

use std::collections::{HashMap, HashSet};
use std::hash::Hasher;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use regex::{Captures, Regex};
use rtwhy_decode::mask::is_kernel_address;
use rtwhy_model::{Analysis, Event};
use serde_json::Value;

/// Where plain address tokens live: `0x5afe` then 32 bits of keyed hash. Far from any
/// kernel address, and recognisable as a stand-in by its first digits.
const TOKEN_BASE: u64 = 0x5afe_0000_0000;
/// Where symbols of the made-up table live: one slot of 2^24 bytes per symbol.
const SYMBOL_BASE: u64 = 0x5afd_0000_0000_0000;
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << 24) - 1;

/// Command-line parameters a reader of a latency report asks about (isolation,
/// preemption, RT, idle and frequency, IRQ affinity, timer and watchdog noise), by name
/// or by prefix (`rcutree.`): every other parameter is dropped.
const KEPT_PARAMS: &[&str] = &[
    "isolcpus",
    "nohz",
    "nohz_full",
    "rcu_nocbs",
    "rcu_nocb_poll",
    "irqaffinity",
    "kthread_cpus",
    "housekeeping",
    "managed_irq",
    "preempt",
    "threadirqs",
    "nosmt",
    "idle",
    "cpuidle.",
    "cpuidle_haltpoll.",
    "haltpoll.",
    "intel_idle.",
    "processor.",
    "intel_pstate",
    "amd_pstate",
    "cpufreq.",
    "rcutree.",
    "rcupdate.",
    "skew_tick",
    "nosoftlockup",
    "nowatchdog",
    "nmi_watchdog",
    "watchdog_thresh",
    "tsc",
    "clocksource",
    "timer_migration",
    "sched_",
    "hpet",
    "highres",
    "transparent_hugepage",
    "numa_balancing",
    "mitigations",
    "audit",
    "nokaslr",
];

/// Prefixes of kernel threads' names: they name no user and stay.
const KERNEL_THREADS: &[&str] = &[
    "kworker/",
    "ksoftirqd/",
    "ktimers/",
    "ktimersoftd/",
    "migration/",
    "irq/",
    "irq_work/",
    "rcu",
    "cpuhp/",
    "idle_inject/",
    "watchdog",
    "swapper",
    "kthreadd",
    "kswapd",
    "kcompactd",
    "khugepaged",
    "kdamond",
    "jbd2/",
    "kauditd",
    "khungtaskd",
    "oom_reaper",
    "kblockd",
    "kintegrityd",
    "writeback",
    "ksmd",
    "pr/",
    "<idle>",
    "<...>",
];

/// Whether `comm` is a kernel thread's name.
pub fn is_kernel_thread(comm: &str) -> bool {
    KERNEL_THREADS.iter().any(|p| comm.starts_with(p))
}

/// What a redaction replaced, for the manifest and the report's last line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Distinct kernel addresses replaced.
    pub addresses: usize,
    /// Symbols kept by name in the trace window's made-up symbol table.
    pub symbols: usize,
    /// Task names replaced by `task-N`.
    pub tasks: usize,
    /// Distinct host and user names found and replaced.
    pub names: usize,
    /// IP and MAC addresses replaced.
    pub network: usize,
    /// UUIDs replaced.
    pub uuids: usize,
    /// Kernel command-line parameters dropped.
    pub params_dropped: usize,
}

/// Replaces private values consistently across one report. See the module docs.
#[derive(Debug)]
pub struct Redactor {
    key: (u64, u64),
    /// Symbol starts of the trace's kernel, sorted, with the start of the next one.
    symbols: Vec<(u64, u64)>,
    addresses: HashMap<u64, u64>,
    tokens: HashSet<u64>,
    /// Symbol start -> start in the made-up table.
    placed: HashMap<u64, u64>,
    slots: HashSet<u64>,
    keep: HashSet<String>,
    tasks: HashMap<String, String>,
    /// Host and user names to look for (lower case), with their stand-ins.
    names: Vec<(String, String)>,
    /// The names of `names` found in some text (or in a home directory's path).
    names_found: HashSet<String>,
    hosts: usize,
    users: HashMap<String, String>,
    network: HashMap<String, String>,
    uuids: HashMap<String, String>,
    params_dropped: usize,
}

impl Redactor {
    /// A redactor whose tokens are keyed by `key` (16 random bytes per report).
    pub fn new(key: [u8; 16]) -> Redactor {
        let (a, b) = key.split_at(8);
        let word = |s: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(s);
            u64::from_le_bytes(w)
        };
        Redactor {
            key: (word(a), word(b)),
            symbols: Vec::new(),
            addresses: HashMap::new(),
            tokens: HashSet::new(),
            placed: HashMap::new(),
            slots: HashSet::new(),
            keep: HashSet::new(),
            tasks: HashMap::new(),
            names: Vec::new(),
            names_found: HashSet::new(),
            hosts: 0,
            users: HashMap::new(),
            network: HashMap::new(),
            uuids: HashMap::new(),
            params_dropped: 0,
        }
    }

    fn hash(&self, v: u64) -> u64 {
        let mut h = siphasher::sip::SipHasher13::new_with_keys(self.key.0, self.key.1);
        h.write_u64(v);
        h.finish()
    }

    /// The trace's kernel symbol addresses (any order, repeats allowed), so that an
    /// address inside a function keeps its function's name and offset.
    pub fn set_symbols(&mut self, starts: impl IntoIterator<Item = u64>) {
        let mut s: Vec<u64> = starts
            .into_iter()
            .filter(|a| is_kernel_address(*a))
            .collect();
        s.sort_unstable();
        s.dedup();
        let ends = s.iter().skip(1).copied().chain(std::iter::once(u64::MAX));
        self.symbols = s.iter().copied().zip(ends).collect();
    }

    /// A host name to replace wherever it appears (with its first label, for an FQDN).
    /// Names shorter than three characters and `localhost` are not private and are
    /// ignored.
    pub fn add_host(&mut self, name: &str) {
        let name = name.trim().to_ascii_lowercase();
        let add = |n: &str, this: &mut Redactor| {
            if n.len() < 3 || n == "localhost" || n == "(none)" {
                return;
            }
            if this.names.iter().any(|(k, _)| k == n) {
                return;
            }
            this.hosts += 1;
            let token = format!("host-{}", this.hosts);
            this.names.push((n.to_string(), token));
        };
        add(&name, self);
        if let Some((first, _)) = name.split_once('.') {
            add(first, self);
        }
        // Longest first, so an FQDN is replaced whole before its first label.
        self.names.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
    }

    /// A user name to replace wherever it appears (`root` and names shorter than three
    /// characters are not private and are ignored).
    pub fn add_user(&mut self, name: &str) {
        let name = name.trim().to_ascii_lowercase();
        if name.len() < 3 || name == "root" || self.names.iter().any(|(k, _)| *k == name) {
            return;
        }
        let token = self.user_token(&name);
        self.names.push((name, token));
        self.names.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
    }

    fn user_token(&mut self, name: &str) -> String {
        let n = self.users.len() + 1;
        self.users
            .entry(name.to_string())
            .or_insert_with(|| format!("user-{n}"))
            .clone()
    }

    /// The host name in a trace's stored `uname -a` (`Linux NAME release ...`).
    pub fn add_uname(&mut self, uname: &str) {
        if let Some(host) = uname.split_whitespace().nth(1) {
            self.add_host(host);
        }
    }

    /// `uname -a` with its host name replaced.
    pub fn uname(&mut self, uname: &str) -> String {
        self.add_uname(uname);
        self.text(uname)
    }

    /// Keeps the names of every task the spikes of `analysis` name (victims, culprits,
    /// wakers, lock holders): they are what the report is about. Give it the spikes the
    /// report shows.
    pub fn keep_tasks_of(&mut self, analysis: &Analysis) {
        for spike in &analysis.spikes {
            if let Ok(v) = serde_json::to_value(spike) {
                collect_comms(&v, &mut self.keep);
            }
        }
    }

    /// The stand-in of kernel address `addr`.
    pub fn address(&mut self, addr: u64) -> u64 {
        if let Some(t) = self.addresses.get(&addr) {
            return *t;
        }
        let t = match self.symbol_of(addr) {
            Some((start, off)) => self.place(start) + off,
            None => {
                let mut t = TOKEN_BASE | (self.hash(addr) & 0xffff_ffff);
                // Distinct addresses stay distinct (the analyzer pairs timers by address).
                while self.tokens.contains(&t) {
                    t = TOKEN_BASE | ((t + 1) & 0xffff_ffff);
                }
                self.tokens.insert(t);
                t
            }
        };
        self.addresses.insert(addr, t);
        t
    }

    /// The symbol `addr` lies in, when the trace has one ending after it and the
    /// offset fits a slot: (symbol start, offset).
    fn symbol_of(&self, addr: u64) -> Option<(u64, u64)> {
        let i = self.symbols.partition_point(|(s, _)| *s <= addr);
        let (start, end) = *self.symbols.get(i.checked_sub(1)?)?;
        let off = addr - start;
        (addr < end && off <= SLOT_MASK).then_some((start, off))
    }

    fn place(&mut self, start: u64) -> u64 {
        if let Some(b) = self.placed.get(&start) {
            return *b;
        }
        let mut slot = self.hash(start ^ 0x5afd) & SLOT_MASK;
        while self.slots.contains(&slot) {
            slot = (slot + 1) & SLOT_MASK;
        }
        self.slots.insert(slot);
        let base = SYMBOL_BASE | (slot << SLOT_BITS);
        self.placed.insert(start, base);
        base
    }

    /// Symbols placed so far: (original start, start in the made-up table).
    pub fn symbols_placed(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self.placed.iter().map(|(a, b)| (*a, *b)).collect();
        v.sort_unstable();
        v
    }

    /// The name to show for task `comm`: `None` keeps it (a task of a reported spike,
    /// a kernel thread), else its `task-N`.
    pub fn comm(&mut self, comm: &str) -> Option<String> {
        if comm.is_empty()
            || self.keep.contains(comm)
            || is_kernel_thread(comm)
            || is_task_token(comm)
        {
            return None;
        }
        let n = self.tasks.len() + 1;
        Some(
            self.tasks
                .entry(comm.to_string())
                .or_insert_with(|| format!("task-{n}"))
                .clone(),
        )
    }

    /// `text` with kernel addresses, UUIDs, MAC and IP addresses, home directories and
    /// the host and user names replaced.
    pub fn text(&mut self, text: &str) -> String {
        let re = patterns();
        let s = re.kaddr.replace_all(text, |c: &Captures| {
            let (prefix, hex) = (c.get(1).map_or("", |m| m.as_str()), &c[2]);
            match u64::from_str_radix(hex, 16) {
                Ok(v) if is_kernel_address(v) => {
                    let t = self.address(v);
                    if prefix.is_empty() {
                        format!("{t:016x}")
                    } else {
                        format!("{prefix}{t:x}")
                    }
                }
                _ => c[0].to_string(),
            }
        });
        let s = re.uuid.replace_all(&s, |c: &Captures| {
            let n = self.uuids.len() + 1;
            self.uuids
                .entry(c[0].to_ascii_lowercase())
                .or_insert_with(|| format!("uuid-{n}"))
                .clone()
        });
        let s = re
            .mac
            .replace_all(&s, |c: &Captures| self.net(&c[0], "mac"));
        let s = replace_checked(&s, &re.ipv6, |m, before, after| {
            let free = |c: Option<char>| {
                !c.is_some_and(|c| c.is_ascii_alphanumeric() || c == ':' || c == '.')
            };
            match m.parse::<Ipv6Addr>() {
                Ok(a) if free(before) && free(after) && !a.is_loopback() && !a.is_unspecified() => {
                    Some(self.net(m, "ip"))
                }
                _ => None,
            }
        });
        let s = replace_checked(&s, &re.ipv4, |m, before, after| {
            // `1.2.3.4.5` is a version, not an address.
            let free = |c: Option<char>| !c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.');
            match m.parse::<Ipv4Addr>() {
                Ok(a)
                    if free(before)
                        && free(after)
                        && !a.is_loopback()
                        && !a.is_unspecified()
                        && a.octets()[0] != 255 =>
                {
                    Some(self.net(m, "ip"))
                }
                _ => None,
            }
        });
        let s = re.home.replace_all(&s, |c: &Captures| {
            let user = c[2].to_ascii_lowercase();
            let token = self.user_token(&user);
            self.names_found.insert(user.clone());
            if user.len() >= 3 && !self.names.iter().any(|(k, _)| *k == user) {
                self.names.push((user, token.clone()));
                self.names.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
            }
            format!("{}{token}", &c[1])
        });
        self.names_replaced(&s)
    }

    fn net(&mut self, m: &str, kind: &str) -> String {
        let prefix = format!("{kind}-");
        let n = self
            .network
            .values()
            .filter(|v| v.starts_with(&prefix))
            .count()
            + 1;
        self.network
            .entry(m.to_ascii_lowercase())
            .or_insert_with(|| format!("{kind}-{n}"))
            .clone()
    }

    /// Host and user names as whole words (case-insensitive) replaced by their tokens.
    fn names_replaced(&mut self, s: &str) -> String {
        let mut out = s.to_string();
        for (name, token) in &self.names {
            let new = replace_word(&out, name, token);
            if new != out {
                self.names_found.insert(name.clone());
                out = new;
            }
        }
        out
    }

    /// A `trace-cmd report` line with the names of tasks that play no part replaced
    /// (the `comm-pid` column, `comm=`-style fields, `sched_switch`'s `comm:pid [prio]`)
    /// and then [`Self::text`].
    pub fn trace_line(&mut self, line: &str) -> String {
        let re = patterns();
        let mut s = line.to_string();
        let found = re
            .prefix
            .captures(&s)
            .and_then(|c| c.get(2))
            .map(|m| (m.range(), m.as_str().to_string()));
        if let Some((range, name)) = found {
            if let Some(new) = self.comm(&name) {
                // Right-aligned in the old name's room, as trace-cmd pads the column.
                let width = name.len();
                s.replace_range(range, &format!("{new:>width$}"));
            }
        }
        let s = re
            .comm_field
            .replace_all(&s, |c: &Captures| {
                let name = &c[2];
                match self.comm(name) {
                    Some(new) => format!("{}{new}{}", &c[1], &c[3]),
                    None => c[0].to_string(),
                }
            })
            .into_owned();
        let s = re
            .switch_task
            .replace_all(&s, |c: &Captures| match self.comm(&c[2]) {
                Some(new) => format!("{}{new}{}", &c[1], &c[3]),
                None => c[0].to_string(),
            })
            .into_owned();
        self.text(&s)
    }

    /// The kernel command line reduced to the parameters a latency report needs, with
    /// how many others were dropped.
    pub fn cmdline(&mut self, cmdline: &str) -> String {
        let mut kept = Vec::new();
        let mut dropped = 0;
        for word in cmdline.split_whitespace() {
            let key = word.split_once('=').map_or(word, |(k, _)| k);
            let keep = KEPT_PARAMS.iter().any(|p| {
                if p.ends_with('.') || p.ends_with('_') {
                    key.starts_with(p)
                } else {
                    key == *p
                }
            });
            if keep {
                kept.push(self.text(word));
            } else {
                dropped += 1;
            }
        }
        self.params_dropped += dropped;
        if dropped > 0 {
            kept.push(format!(
                "(+{dropped} other parameter{} redacted)",
                if dropped == 1 { "" } else { "s" }
            ));
        }
        kept.join(" ")
    }

    /// The text of a `print` event: an `rtwhy-fact: kernel.cmdline=` marker reduced like
    /// [`Self::cmdline`], a breach marker's task names replaced, then [`Self::text`].
    pub fn marker(&mut self, text: &str) -> String {
        let fact_cmdline = format!("{}kernel.cmdline=", rtwhy_model::FACT_PREFIX);
        if let Some(rest) = text.strip_prefix(&fact_cmdline) {
            let (value, tail) = match rest.find('\n') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            return format!("{fact_cmdline}{}{tail}", self.cmdline(value));
        }
        if text.starts_with(rtwhy_model::BREACH_PREFIX) {
            let s = patterns()
                .breach_comm
                .replace_all(text, |c: &Captures| {
                    // Names are escaped in breach markers (docs/markers.md).
                    let name = c[2]
                        .replace("%20", " ")
                        .replace("%3D", "=")
                        .replace("%0A", "\n")
                        .replace("%25", "%");
                    match self.comm(&name) {
                        Some(new) => format!("{}{new}", &c[1]),
                        None => c[0].to_string(),
                    }
                })
                .into_owned();
            return self.text(&s);
        }
        self.text(text)
    }

    /// `analysis` with its command line reduced, its evidence lines' uninvolved task
    /// names replaced, and every other string through [`Self::text`] (and any kernel
    /// address held as a number through [`Self::address`]).
    pub fn analysis(&mut self, analysis: &Analysis) -> serde_json::Result<Analysis> {
        let mut a = analysis.clone();
        if let Some(c) = a.facts.cmdline.take() {
            a.facts.cmdline = Some(self.cmdline(&c));
        }
        let mut facts = serde_json::to_value(&a.facts)?;
        self.walk(&mut facts, None);
        a.facts = serde_json::from_value(facts)?;
        for s in &mut a.spikes {
            for e in &mut s.evidence {
                e.line = self.trace_line(&e.line);
            }
            let mut v = serde_json::to_value(&*s)?;
            self.walk(&mut v, None);
            *s = serde_json::from_value(v)?;
        }
        for v in &mut a.victims {
            if let Some(new) = self.comm(&v.task.comm.to_str_lossy()) {
                v.task.comm = rtwhy_model::Comm::new(&new);
            }
        }
        Ok(a)
    }

    /// An event of a spike's window, as [`Self::analysis`] does to the analysis.
    pub fn event(&mut self, ev: &Event) -> serde_json::Result<Event> {
        let mut v = serde_json::to_value(ev)?;
        self.walk(&mut v, None);
        serde_json::from_value(v)
    }

    fn walk(&mut self, v: &mut Value, key: Option<&str>) {
        match v {
            Value::String(s) => {
                let new = match key {
                    Some(k) if k.ends_with("comm") => self.comm(s),
                    Some("line") | Some("cmdline") => None,
                    Some("text") => Some(self.marker(s)),
                    _ => Some(self.text(s)),
                };
                if let Some(new) = new {
                    *s = new;
                }
            }
            Value::Number(n) => {
                if let Some(u) = n.as_u64().filter(|u| is_kernel_address(*u)) {
                    *n = self.address(u).into();
                }
            }
            // A generic event's fields are `[name, value]` pairs: each value is read by
            // its name, as an object's.
            Value::Array(items) if key == Some("fields") => {
                for pair in items {
                    match pair.as_array_mut().map(Vec::as_mut_slice) {
                        Some([Value::String(name), value]) => {
                            let name = name.clone();
                            self.walk(value, Some(&name));
                        }
                        _ => self.walk(pair, None),
                    }
                }
            }
            Value::Array(items) => {
                for i in items {
                    self.walk(i, key);
                }
            }
            Value::Object(map) => {
                for (k, val) in map.iter_mut() {
                    self.walk(val, Some(k.as_str()));
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }

    /// What was replaced so far.
    pub fn counts(&self) -> Counts {
        Counts {
            addresses: self.addresses.len(),
            symbols: self.placed.len(),
            tasks: self.tasks.len(),
            names: self.names_found.len(),
            network: self.network.len(),
            uuids: self.uuids.len(),
            params_dropped: self.params_dropped,
        }
    }
}

/// How the trace window's records and tables are rewritten: the same replacements as
/// every other file of the report, a `print` event's text as a marker.
impl rtwhy_decode::mask::Mask for Redactor {
    fn address(&mut self, addr: u64) -> u64 {
        Redactor::address(self, addr)
    }

    fn comm(&mut self, comm: &str) -> Option<String> {
        Redactor::comm(self, comm)
    }

    fn text(&mut self, text: &str) -> String {
        self.marker(text)
    }

    fn symbols(&self) -> Vec<(u64, u64)> {
        self.symbols_placed()
    }
}

fn is_task_token(comm: &str) -> bool {
    comm.strip_prefix("task-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn collect_comms(v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, val) in map {
                match val {
                    Value::String(s) if k.ends_with("comm") => {
                        out.insert(s.clone());
                    }
                    _ => collect_comms(val, out),
                }
            }
        }
        Value::Array(items) => {
            for i in items {
                collect_comms(i, out);
            }
        }
        _ => {}
    }
}

/// `s` with each match of `re` that `f` (given the match and the characters before
/// and after it) returns a replacement for replaced.
fn replace_checked(
    s: &str,
    re: &Regex,
    mut f: impl FnMut(&str, Option<char>, Option<char>) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for m in re.find_iter(s) {
        let before = s.get(..m.start()).and_then(|t| t.chars().next_back());
        let after = s.get(m.end()..).and_then(|t| t.chars().next());
        if let Some(new) = f(m.as_str(), before, after) {
            out.push_str(s.get(last..m.start()).unwrap_or_default());
            out.push_str(&new);
            last = m.end();
        }
    }
    out.push_str(s.get(last..).unwrap_or_default());
    out
}

/// `s` with every whole-word, case-insensitive occurrence of `word` (lower case)
/// replaced by `token`. A word boundary is anything but an ASCII letter, digit or `_`.
fn replace_word(s: &str, word: &str, token: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let bytes = s.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(i) = lower.get(from..).and_then(|t| t.find(word)) {
        let at = from + i;
        let end = at + word.len();
        let before_ok = at == 0 || !bytes.get(at - 1).copied().is_some_and(is_word);
        let after_ok = !bytes.get(end).copied().is_some_and(is_word);
        if before_ok && after_ok {
            out.push_str(s.get(last..at).unwrap_or_default());
            out.push_str(token);
            last = end;
        }
        from = end;
    }
    out.push_str(s.get(last..).unwrap_or_default());
    out
}

struct Patterns {
    kaddr: Regex,
    uuid: Regex,
    mac: Regex,
    ipv6: Regex,
    ipv4: Regex,
    home: Regex,
    prefix: Regex,
    comm_field: Regex,
    switch_task: Regex,
    breach_comm: Regex,
}

#[allow(clippy::expect_used)] // constant patterns, checked by every test
fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("constant pattern");
        Patterns {
            kaddr: re(r"\b(0[xX])?([0-9a-fA-F]{16})\b"),
            uuid: re(
                r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
            ),
            mac: re(r"\b[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}\b|\b[0-9a-fA-F]{2}(?:-[0-9a-fA-F]{2}){5}\b"),
            ipv6: re(r"(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}"),
            ipv4: re(r"\d{1,3}(?:\.\d{1,3}){3}"),
            home: re(r"(/(?:home|Users|var/home)/)([A-Za-z0-9._-]+)"),
            prefix: re(r"^(\s*(?:\S+:\s+)?\s*)(\S(?:.*?\S)?)-\d+\s+\[\d+\]"),
            comm_field: re(r"(\b\w*comm=)(.+?)( \w*pid=)"),
            switch_task: re(r"((?:sched_\w+:\s+|==> ))(\S(?:[^:\n]*?\S)?)(:\d+ \[-?\d+\])"),
            breach_comm: re(r"(\b(?:prev_)?comm=)(\S+)"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        let mut r = Redactor::new(*b"0123456789abcdef");
        r.add_host("builder7.corp.example.com");
        r
    }

    #[test]
    fn the_same_address_gets_the_same_token_and_another_key_another() {
        let mut r = redactor();
        let a = r.text("hrtimer=0xff5304f8c05fbac0 function=0xff5304f8c05fbac0");
        let (x, y) = a.split_once(' ').unwrap();
        assert_eq!(
            x.trim_start_matches("hrtimer="),
            y.trim_start_matches("function=")
        );
        assert!(x.starts_with("hrtimer=0x5afe"), "{a}");
        let mut other = Redactor::new(*b"fedcba9876543210");
        assert_ne!(
            other.text("0xff5304f8c05fbac0"),
            x.trim_start_matches("hrtimer=")
        );
        // Numbers that are not kernel addresses stay.
        assert_eq!(
            r.text("val=0x00000002 -1=0xffffffffffffffff"),
            "val=0x00000002 -1=0xffffffffffffffff"
        );
    }

    #[test]
    fn distinct_addresses_stay_distinct() {
        let mut r = redactor();
        let mut seen = HashSet::new();
        for i in 0..5000u64 {
            assert!(seen.insert(r.address(0xff11_0000_0000_0000 + i * 64)));
        }
    }

    #[test]
    fn an_address_in_a_symbol_keeps_its_offset_in_the_made_up_table() {
        let mut r = redactor();
        r.set_symbols([0xffff_ffff_8100_0000, 0xffff_ffff_8100_0100]);
        let a = r.address(0xffff_ffff_8100_0010);
        let base = r.address(0xffff_ffff_8100_0000);
        assert_eq!(a, base + 0x10);
        assert_eq!(r.symbols_placed(), vec![(0xffff_ffff_8100_0000, base)]);
        // Past the last symbol's slot: a plain token.
        assert_eq!(r.address(0xffff_ffff_c000_0000) >> 32, TOKEN_BASE >> 32);
    }

    #[test]
    fn hosts_networks_uuids_and_homes_are_replaced() {
        let mut r = redactor();
        let s = r.text(
            "root=UUID=3f1c2a9e-4b7d-4c1e-9a2f-0d6e5b4c3a21 ip=10.20.30.40:10.20.30.1::255.255.255.0:Builder7:eth0:off \
             mac 52:54:00:12:34:56 fe80::5054:ff:fe12:3456 nfs builder7.corp.example.com:/home/alice/rt \
             owner alice, kernel 6.18.44 at 127.0.0.1",
        );
        for secret in [
            "3f1c2a9e",
            "10.20.30.40",
            "10.20.30.1",
            "Builder7",
            "builder7",
            "52:54:00",
            "fe80::",
            "alice",
            "corp.example",
        ] {
            assert!(!s.contains(secret), "{secret} in {s}");
        }
        // Found: the host's full name and its first label, the home directory's owner;
        // two IPv4 addresses, an IPv6 one and a MAC; one UUID.
        let c = r.counts();
        assert_eq!((c.names, c.network, c.uuids), (3, 4, 1), "{c:?}");
        for kept in [
            "255.255.255.0",
            "6.18.44",
            "127.0.0.1",
            "uuid-1",
            "ip-1",
            "host-1",
            "/home/user-1/rt",
        ] {
            assert!(s.contains(kept), "{kept} not in {s}");
        }
    }

    #[test]
    fn the_command_line_keeps_what_a_latency_report_needs() {
        let mut r = redactor();
        let c = r.cmdline(
            "BOOT_IMAGE=/vmlinuz root=UUID=3f1c2a9e-4b7d-4c1e-9a2f-0d6e5b4c3a21 ro isolcpus=managed_irq,2-3 \
             nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 preempt=full intel_idle.max_cstate=1 \
             nfsroot=10.0.0.1:/srv/nfs/builder7 quiet",
        );
        assert_eq!(
            c,
            "isolcpus=managed_irq,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 preempt=full intel_idle.max_cstate=1 (+5 other parameters redacted)"
        );
        assert_eq!(r.counts().params_dropped, 5);
    }

    #[test]
    fn uninvolved_tasks_are_renamed_in_trace_lines_and_the_others_kept() {
        let mut r = redactor();
        r.keep.insert("cyclictest".into());
        let line = "   secret app-4242  [001]  4311.559870: sched_switch:         secret app:4242 [120] R ==> cyclictest:99 [19]";
        let out = r.trace_line(line);
        assert_eq!(
            out,
            "       task-1-4242  [001]  4311.559870: sched_switch:         task-1:4242 [120] R ==> cyclictest:99 [19]"
        );
        let w = r.trace_line(
            "      ksoftirqd/1-23    [001]  1.0: sched_waking: comm=chromium pid=77 prio=120 target_cpu=001",
        );
        assert_eq!(
            w,
            "      ksoftirqd/1-23    [001]  1.0: sched_waking: comm=task-2 pid=77 prio=120 target_cpu=001"
        );
        assert_eq!(r.comm("chromium"), Some("task-2".into()));
        assert_eq!(r.comm("irq/30-eth0"), None);
    }

    #[test]
    fn breach_and_fact_markers_are_redacted() {
        let mut r = redactor();
        r.keep.insert("cyclictest".into());
        r.keep.insert("Web Content".into());
        let w = r.marker("rtwhy-breach: v=1 tid=4 comm=Web%20Content cpu=1");
        assert_eq!(w, "rtwhy-breach: v=1 tid=4 comm=Web%20Content cpu=1");
        let b = r.marker("rtwhy-breach: v=1 tid=4 comm=cyclictest cpu=1 prev_tid=5 prev_comm=firefox stack=a+0x1/0x2");
        assert!(
            b.contains("comm=cyclictest") && b.contains("prev_comm=task-1"),
            "{b}"
        );
        let f = r.marker("rtwhy-fact: kernel.cmdline=root=/dev/sda1 isolcpus=1\n");
        assert_eq!(
            f,
            "rtwhy-fact: kernel.cmdline=isolcpus=1 (+1 other parameter redacted)\n"
        );
    }
}
