//! Kernel symbols from `/proc/kallsyms`: naming BPF stack addresses, and keeping in
//! each capture only the symbols its events point at (the whole table is 5 MB here; a
//! trace.dat v6 stores it uncompressed).

use std::collections::BTreeSet;

/// Text symbols sorted by address.
#[derive(Debug, Default, Clone)]
pub struct KernelSymbols {
    /// (address, byte range of the line in `text`)
    entries: Vec<(u64, usize, usize)>,
    text: String,
}

impl KernelSymbols {
    /// Parses kallsyms text; keeps function symbols (`t`/`T`) with a non-zero address
    /// (unprivileged readers see zeros).
    pub fn parse(text: String) -> KernelSymbols {
        let mut entries = Vec::new();
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let mut w = line.split_whitespace();
            let (Some(addr), Some(kind), Some(_)) = (w.next(), w.next(), w.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T") {
                continue;
            }
            if let Ok(a) = u64::from_str_radix(addr, 16) {
                if a != 0 {
                    entries.push((a, start, at));
                }
            }
        }
        entries.sort_unstable_by_key(|e| e.0);
        KernelSymbols { entries, text }
    }

    /// Reads `/proc/kallsyms` (empty when unreadable).
    pub fn load() -> KernelSymbols {
        KernelSymbols::parse(std::fs::read_to_string("/proc/kallsyms").unwrap_or_default())
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn covering(&self, addr: u64) -> Option<usize> {
        let first = self.entries.first()?.0;
        // Past the last symbol by more than a generous function size: not kernel text.
        let last = self.entries.last()?.0 + (1 << 20);
        if addr < first || addr > last {
            return None;
        }
        Some(self.entries.partition_point(|e| e.0 <= addr) - 1)
    }

    fn line(&self, i: usize) -> &str {
        let (_, s, e) = self.entries[i];
        &self.text[s..e]
    }

    /// The address of the one kernel function (not a module's) named `name`; `None`
    /// when there is none, or more than one (static functions can share a name).
    pub fn address_of(&self, name: &str) -> Option<u64> {
        let mut found = None;
        for (i, &(addr, _, _)) in self.entries.iter().enumerate() {
            let mut words = self.line(i).split_whitespace().skip(2);
            if words.next() == Some(name) && words.next().is_none() {
                if found.is_some() {
                    return None;
                }
                found = Some(addr);
            }
        }
        found
    }

    /// `function+0xoff` for a text address.
    pub fn name(&self, addr: u64) -> Option<String> {
        let i = self.covering(addr)?;
        let name = self.line(i).split_whitespace().nth(2)?;
        Some(format!("{name}+{:#x}", addr - self.entries[i].0))
    }

    /// The kallsyms lines of the symbols covering `addrs`, in address order.
    pub fn subset(&self, addrs: impl IntoIterator<Item = u64>) -> String {
        let picked: BTreeSet<usize> = addrs.into_iter().filter_map(|a| self.covering(a)).collect();
        let mut out = String::new();
        for i in picked {
            out.push_str(self.line(i));
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }

    /// Every 8-byte word of `data` (at 4-byte steps, as ring-buffer payloads align) that
    /// falls in the kernel's text, for [`KernelSymbols::subset`].
    pub fn words_in_text(&self, data: &[u8], out: &mut Vec<u64>) {
        let (Some(first), Some(last)) = (self.entries.first(), self.entries.last()) else {
            return;
        };
        let (lo, hi) = (first.0, last.0 + (1 << 20));
        let mut i = 0;
        while i + 8 <= data.len() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&data[i..i + 8]);
            let v = u64::from_ne_bytes(b);
            if v >= lo && v <= hi {
                out.push(v);
            }
            i += 4;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "ffffffff81000000 T _stext\n\
                        ffffffff81000100 t helper\n\
                        ffffffff81000200 D some_data\n\
                        ffffffff81000300 T hrtimer_wakeup\n\
                        0000000000000000 T hidden\n";

    #[test]
    fn names_and_subsets() {
        let s = KernelSymbols::parse(TEXT.to_string());
        assert_eq!(s.len(), 3);
        assert_eq!(s.name(0xffffffff81000110).as_deref(), Some("helper+0x10"));
        assert_eq!(
            s.name(0xffffffff81000300).as_deref(),
            Some("hrtimer_wakeup+0x0")
        );
        assert_eq!(s.name(0x1000), None);
        assert_eq!(
            s.subset([0xffffffff81000301, 0xffffffff81000101, 0xffffffff81000302]),
            "ffffffff81000100 t helper\nffffffff81000300 T hrtimer_wakeup\n"
        );
        let mut words = Vec::new();
        let mut data = vec![0u8; 4];
        data.extend_from_slice(&0xffffffff81000305u64.to_ne_bytes());
        s.words_in_text(&data, &mut words);
        assert_eq!(words, vec![0xffffffff81000305]);
    }

    #[test]
    fn one_kernel_function_by_name() {
        let s = KernelSymbols::parse(TEXT.to_string());
        assert_eq!(s.address_of("hrtimer_wakeup"), Some(0xffffffff81000300));
        assert_eq!(s.address_of("some_data"), None, "not a function");
        assert_eq!(s.address_of("hidden"), None, "no address");
        assert_eq!(s.address_of("hrtimer"), None);
        // Two static functions of one name: neither is the one.
        let twice = KernelSymbols::parse(format!("{TEXT}ffffffff81000400 t helper\n"));
        assert_eq!(twice.address_of("helper"), None);
        // A module's function of the same name is not the kernel's.
        let module = KernelSymbols::parse(format!("{TEXT}ffffffffc0000000 t _stext\t[some_mod]\n"));
        assert_eq!(module.address_of("_stext"), Some(0xffffffff81000000));
    }
}
