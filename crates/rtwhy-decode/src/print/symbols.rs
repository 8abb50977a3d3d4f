//! Address-to-function lookup exactly as libtraceevent performs it, including which of
//! several aliases at one address it picks and that nothing past the last symbol
//! resolves.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::symbols::Kallsyms;

/// Functions sorted by address, in the order libtraceevent's table ends up in.
#[derive(Debug, Default)]
pub(crate) struct FuncMap {
    addrs: Vec<u64>,
    names: Vec<String>,
    by_name: OnceLock<HashMap<String, u64>>,
}

impl FuncMap {
    /// Builds the table from kallsyms, dropping absolute (`A`/`a`) and `$` symbols as
    /// libtraceevent does.
    pub fn new(k: &Kallsyms) -> FuncMap {
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
        FuncMap {
            addrs: rows.iter().map(|r| r.0).collect(),
            names: rows.iter().map(|r| r.1.to_string()).collect(),
            by_name: OnceLock::new(),
        }
    }

    /// The function containing `addr`: (start address, name).
    pub fn find(&self, addr: u64) -> Option<(u64, &str)> {
        let n = self.addrs.len();
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let start = self.addrs[mid];
            let next = if mid + 1 < n { self.addrs[mid + 1] } else { 0 };
            if addr == start || (addr > start && addr < next) {
                return Some((start, self.names[mid].as_str()));
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
        let map = self.by_name.get_or_init(|| {
            let mut m = HashMap::new();
            for (a, n) in self.addrs.iter().zip(self.names.iter()) {
                m.entry(n.clone()).or_insert(*a);
            }
            m
        });
        map.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_matches_libtraceevent() {
        let k = Kallsyms::parse("1000 T a\n1000 T a_alias\n1100 t b\n1200 A abs\n1300 T last\n");
        let m = FuncMap::new(&k);
        assert_eq!(m.find(0x1050), Some((0x1000, "a")));
        assert_eq!(m.find(0x1100), Some((0x1100, "b")));
        assert_eq!(m.find(0x1250), Some((0x1100, "b")));
        assert_eq!(m.find(0x1300), Some((0x1300, "last")));
        assert_eq!(m.find(0x1301), None);
        assert_eq!(m.find(0x10), None);
        assert_eq!(m.address_of("b"), Some(0x1100));
    }
}
