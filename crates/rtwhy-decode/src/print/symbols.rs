//! Address-to-function lookup exactly as libtraceevent performs it, including which of
//! several aliases at one address it picks and that nothing past the last symbol
//! resolves.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

use super::Hole;

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
    /// Where to note a function left out while the symbols are not read yet (see
    /// [`super::Printer::defer_symbols`]); `None` to wait for them.
    pub defer: Option<&'a RefCell<Vec<Hole>>>,
}

/// Addresses, and names as byte ranges of the kallsyms text (no copy of a few hundred
/// thousand names); the addresses apart, so the binary search walks one dense array.
#[derive(Debug, Default)]
struct Table {
    addrs: Vec<u64>,
    names: Vec<(u32, u32)>,
}

impl<'a> Funcs<'a> {
    /// The table over kallsyms, dropping absolute (`A`/`a`) and `$` symbols as
    /// libtraceevent does; built once per map.
    fn table(&self) -> &'a Table {
        let k = self.kallsyms;
        self.map.table.get_or_init(|| build(k))
    }

    /// Whether a lookup now would not wait for the symbols to be read.
    pub fn ready(&self) -> bool {
        self.map.table.get().is_some() || self.kallsyms.is_parsed()
    }

    /// The function containing `addr`: (start address, name).
    pub fn find(&self, addr: u64) -> Option<(u64, &'a str)> {
        let k: &'a Kallsyms = self.kallsyms;
        let t = self.table();
        // libtraceevent's bsearch, step for step: which alias it lands on depends on the
        // path it takes, and past the last symbol only its exact address resolves.
        let (mut lo, mut hi) = (0usize, t.addrs.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let start = t.addrs.get(mid).copied().unwrap_or(0);
            let next = t.addrs.get(mid + 1).copied().unwrap_or(0);
            if addr == start || (addr > start && addr < next) {
                let name = t.names.get(mid).map_or("", |r| k.slice(*r));
                return Some((start, name));
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
            let mut m = HashMap::with_capacity(t.names.len());
            for (a, n) in t.addrs.iter().zip(&t.names) {
                m.entry(self.kallsyms.slice(*n).to_string()).or_insert(*a);
            }
            m
        });
        map.get(name).copied()
    }
}

fn build(k: &Kallsyms) -> Table {
    let mut rows: Vec<(u64, (u32, u32))> = k
        .iter_ranges()
        .filter(|(_, n, t)| !k.slice(*n).starts_with('$') && *t != b'A' && *t != b'a')
        .map(|(a, n, _)| (a, n))
        .collect();
    // libtraceevent registers symbols by prepending to a list, then sorts stably by
    // address: aliases end up in reverse file order.
    let mut i = 0;
    while i < rows.len() {
        let mut j = i + 1;
        while rows
            .get(j)
            .is_some_and(|r| Some(r.0) == rows.get(i).map(|r| r.0))
        {
            j += 1;
        }
        if let Some(group) = rows.get_mut(i..j) {
            group.reverse();
        }
        i = j;
    }
    let (addrs, names) = rows.into_iter().unzip();
    Table { addrs, names }
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
            defer: None,
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
