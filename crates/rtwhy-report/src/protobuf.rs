//! The protobuf wire format, as far as the Perfetto writer needs it: varints,
//! length-delimited fields and the two's-complement encoding of negative `int32`/`int64`.
//! Written by hand so that encoding an event reuses buffers instead of allocating
//! message objects (a 1 GiB trace is tens of millions of events).

/// Wire type of varint fields (`int32`, `uint64`, `bool`, enums).
const VARINT: u32 = 0;
/// Wire type of length-delimited fields (strings, bytes, sub-messages).
const LEN: u32 = 2;

/// Appends `v` as a base-128 varint.
pub fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends a field key.
fn key(buf: &mut Vec<u8>, field: u32, wire: u32) {
    varint(buf, u64::from(field) << 3 | u64::from(wire));
}

/// An unsigned varint field (`uint32`, `uint64`, `bool`, enum).
pub fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, VARINT);
    varint(buf, v);
}

/// A signed varint field (`int32`, `int64`): negative values take ten bytes, sign
/// extended to 64 bits as protobuf requires for both widths.
pub fn int(buf: &mut Vec<u8>, field: u32, v: i64) {
    uint(buf, field, v as u64);
}

/// A length-delimited field holding `bytes` (a string, bytes, or an encoded message).
pub fn bytes(buf: &mut Vec<u8>, field: u32, data: &[u8]) {
    len_prefix(buf, field, data.len());
    buf.extend_from_slice(data);
}

/// The key and length of a length-delimited field whose `len` bytes follow.
pub fn len_prefix(buf: &mut Vec<u8>, field: u32, len: usize) {
    key(buf, field, LEN);
    varint(buf, len as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_the_protobuf_documentation() {
        // protobuf.dev "Encoding": 150 is 96 01; field 1 varint 150 is 08 96 01.
        let mut b = Vec::new();
        uint(&mut b, 1, 150);
        assert_eq!(b, [0x08, 0x96, 0x01]);
        let mut b = Vec::new();
        int(&mut b, 2, -1);
        assert_eq!(b.len(), 11, "negative int32 is sign-extended to ten bytes");
        assert_eq!(b[0], 0x10);
        assert_eq!(b[10], 0x01);
        let mut b = Vec::new();
        bytes(&mut b, 2, b"testing");
        assert_eq!(b, [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
    }
}
