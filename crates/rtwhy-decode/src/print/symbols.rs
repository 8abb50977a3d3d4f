//! Address-to-function lookup exactly as libtraceevent performs it, including which of
//! several aliases at one address it picks and that nothing past the last symbol
//! resolves.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::symbols::Kallsyms;

/// Functions sorted by address, in the order libtraceevent's table ends up in. Built
/// on the first lookup, so printing a trace that never symbolizes does not pay for it.
#[derive(Debug, Default)]
pub(crate) struct FuncMap {
    table: OnceLock<Table>,
    by_name: OnceLock<HashMap<String, u64>>,
}

/// A [`FuncMap`] with the symbols it is built from, for one lookup.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Funcs<'a> {
    pub map: &'a FuncMap,
    pub kallsyms: &'a Kallsyms,
}

/// Addresses, and the names concatenated (`ends[i]` is where name `i` ends).
#[derive(Debug, Default)]
struct Table {
    addrs: Vec<u64>,
    names: String,
    ends: Vec<usize>,
}

impl Table {
    fn name(&self, i: usize) -> &str {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.names.get(start..end).unwrap_or_default()
    }
}

impl<'a> Funcs<'a> {
    /// The table over kallsyms, dropping absolute (`A`/`a`) and `$` symbols as
    /// libtraceevent does; built once per map.
    fn table(&self) -> &'a Table {
        let k = self.kallsyms;
        self.map.table.get_or_init(|| build(k))
    }

    /// The function containing `addr`: (start address, name).
    pub fn find(&self, addr: u64) -> Option<(u64, &'a str)> {
        let t = self.table();
        let n = t.addrs.len();
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let start = t.addrs.get(mid).copied().unwrap_or(0);
            let next = t.addrs.get(mid + 1).copied().unwrap_or(0);
            if addr == start || (addr > start && addr < next) {
                return Some((start, t.name(mid)));
            }
            if addr < start {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        None
    }

    /// The address of a symbol by name (first in address order), for identifiers used
    /// as values in print formats.
    pub fn address_of(&self, name: &str) -> Option<u64> {
        let map = self.map.by_name.get_or_init(|| {
            let t = self.table();
            let mut m = HashMap::new();
            for (i, a) in t.addrs.iter().enumerate() {
                m.entry(t.name(i).to_string()).or_insert(*a);
            }
            m
        });
        map.get(name).copied()
    }
}

fn build(k: &Kallsyms) -> Table {
    let mut rows: Vec<(u64, &str)> = k
        .iter()
        .filter(|(_, n, t)| !n.starts_with('$') && *t != 'A' && *t != 'a')
        .map(|(a, n, _)| (a, n))
        .collect();
    // libtraceevent registers symbols by prepending to a list, then sorts stably by
    // address: aliases end up in reverse file order.
    let mut i = 0;
    while i < rows.len() {
        let mut j = i + 1;
        while j < rows.len() && rows[j].0 == rows[i].0 {
            j += 1;
        }
        rows[i..j].reverse();
        i = j;
    }
    let mut t = Table {
        addrs: Vec::with_capacity(rows.len()),
        names: String::with_capacity(rows.iter().map(|r| r.1.len()).sum()),
        ends: Vec::with_capacity(rows.len()),
    };
    for (a, n) in rows {
        t.addrs.push(a);
        t.names.push_str(n);
        t.ends.push(t.names.len());
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_matches_libtraceevent() {
        let k = Kallsyms::parse("1000 T a\n1000 T a_alias\n1100 t b\n1200 A abs\n1300 T last\n");
        let map = FuncMap::default();
        let m = Funcs {
            map: &map,
            kallsyms: &k,
        };
        assert_eq!(m.find(0x1050), Some((0x1000, "a")));
        assert_eq!(m.find(0x1100), Some((0x1100, "b")));
        assert_eq!(m.find(0x1250), Some((0x1100, "b")));
        assert_eq!(m.find(0x1300), Some((0x1300, "last")));
        assert_eq!(m.find(0x1301), None);
        assert_eq!(m.find(0x10), None);
        assert_eq!(m.address_of("b"), Some(0x1100));
    }
}
