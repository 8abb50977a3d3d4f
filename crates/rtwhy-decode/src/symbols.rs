//! What a trace file carries besides events: kernel symbols, `trace_printk` formats and
//! saved command lines (pid to task name).

use std::collections::HashMap;

type Symbol = (u64, String, Option<String>, char);

/// Kernel symbols from `/proc/kallsyms`, for turning addresses into `function+0x10`.
///
/// A kallsyms table holds a few hundred thousand lines; it is parsed the first time a
/// symbol is looked up, so reading a trace that never needs one does not pay for it.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    text: std::sync::Arc<str>,
    /// Sorted by address; symbols sharing an address keep their file order.
    entries: std::sync::OnceLock<Vec<Symbol>>,
}

impl Kallsyms {
    /// Keeps kallsyms text (`ffffffff81000000 T _stext [module]`) to be parsed on first
    /// use; bad lines are skipped then.
    pub fn parse(text: &str) -> Kallsyms {
        Kallsyms {
            text: text.into(),
            entries: std::sync::OnceLock::new(),
        }
    }

    /// Lines of the kallsyms text: the number of symbols, without parsing them.
    pub fn line_count(&self) -> usize {
        self.text.lines().filter(|l| !l.trim().is_empty()).count()
    }

    fn entries(&self) -> &Vec<Symbol> {
        self.entries.get_or_init(|| parse_entries(&self.text))
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// The symbol at or below `addr`: (start address, name, module).
    pub fn lookup(&self, addr: u64) -> Option<(u64, &str, Option<&str>)> {
        let idx = self.entries().partition_point(|e| e.0 <= addr);
        let (start, name, module, _) = self.entries().get(idx.checked_sub(1)?)?;
        Some((*start, name.as_str(), module.as_deref()))
    }

    /// All symbols as (address, name, kallsyms type letter), sorted by address, symbols
    /// sharing an address in file order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &str, char)> {
        self.entries()
            .iter()
            .map(|(a, n, _, k)| (*a, n.as_str(), *k))
    }

    /// The symbol whose address is exactly `addr`.
    pub fn exact(&self, addr: u64) -> Option<&str> {
        self.lookup(addr)
            .filter(|(start, _, _)| *start == addr)
            .map(|(_, n, _)| n)
    }
}

fn parse_entries(text: &str) -> Vec<Symbol> {
    let mut entries = Vec::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(addr), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        let module = parts
            .next()
            .map(|m| m.trim_matches(|c| c == '[' || c == ']').to_string());
        let kind = kind.chars().next().unwrap_or('?');
        entries.push((addr, name.to_string(), module, kind));
    }
    entries.sort_by_key(|e| e.0);
    entries
}

/// `trace_printk` format strings by address (`printk_formats`).
#[derive(Debug, Clone, Default)]
pub struct PrintkFormats {
    map: HashMap<u64, String>,
}

impl PrintkFormats {
    /// Parses `0xffffffff81e0c0a0 : "format\n"` lines; bad lines are skipped.
    pub fn parse(text: &str) -> PrintkFormats {
        let mut map = HashMap::new();
        for line in text.lines() {
            let Some((addr, fmt)) = line.split_once(':') else {
                continue;
            };
            let addr = addr.trim().trim_start_matches("0x");
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let fmt = fmt.trim();
            let fmt = fmt.strip_prefix('"').unwrap_or(fmt);
            let fmt = fmt.strip_suffix('"').unwrap_or(fmt);
            map.insert(addr, fmt.to_string());
        }
        PrintkFormats { map }
    }

    /// The format at `addr`, still with its C escapes (`\n`) as written in the file.
    pub fn get(&self, addr: u64) -> Option<&str> {
        self.map.get(&addr).map(String::as_str)
    }

    /// Number of formats.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Task names by pid (`saved_cmdlines`: `<pid> <comm>` lines).
#[derive(Debug, Clone, Default)]
pub struct Cmdlines {
    map: HashMap<i32, String>,
}

impl Cmdlines {
    /// Parses `pid comm` lines; bad lines are skipped. Later lines win.
    pub fn parse(text: &str) -> Cmdlines {
        let mut map = HashMap::new();
        for line in text.lines() {
            let line = line.trim_start();
            let Some((pid, comm)) = line.split_once(' ') else {
                continue;
            };
            let Ok(pid) = pid.parse::<i32>() else {
                continue;
            };
            map.insert(pid, comm.to_string());
        }
        Cmdlines { map }
    }

    /// The name of `pid`, if saved.
    pub fn get(&self, pid: i32) -> Option<&str> {
        self.map.get(&pid).map(String::as_str)
    }

    /// Adds or replaces a name.
    pub fn insert(&mut self, pid: i32, comm: String) {
        self.map.insert(pid, comm);
    }

    /// All saved (pid, name) pairs, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (i32, &str)> {
        self.map.iter().map(|(p, c)| (*p, c.as_str()))
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
