//! Lowercase hex, the one encoder of the workspace: ids, hashes and digests are written with
//! it, and 32-byte hashes read back.

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The two lowercase hex digits of every byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 0x0f]];
        i += 1;
    }
    t
};

/// Lowercase hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    // A digest at a time through a stack buffer: no capacity check per digit.
    for chunk in bytes.chunks(32) {
        let mut buf = [0u8; 64];
        for (pair, b) in buf.chunks_exact_mut(2).zip(chunk) {
            pair.copy_from_slice(&HEX_PAIRS[usize::from(*b)]);
        }
        // Only ASCII hex digits were written.
        out.push_str(std::str::from_utf8(&buf[..2 * chunk.len()]).unwrap_or_default());
    }
    out
}

/// Hex digit values by byte; [`BAD`] for a byte that is no hex digit.
const DIGITS: [u8; 256] = {
    let mut t = [BAD; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Not a hex digit (in [`DIGITS`]).
const BAD: u8 = 0xff;

/// Parses 64 hex digits (either case) into 32 bytes.
pub fn from_hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.as_bytes();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    let mut bad = 0u8;
    for (i, o) in out.iter_mut().enumerate() {
        let (hi, lo) = (
            DIGITS[usize::from(s[2 * i])],
            DIGITS[usize::from(s[2 * i + 1])],
        );
        bad |= (hi | lo) & 0xf0;
        *o = (hi << 4) | (lo & 0x0f);
    }
    (bad == 0).then_some(out)
}

/// Parses an even number of hex digits (either case) into bytes.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks_exact(2)
        .map(|pair| {
            let (hi, lo) = (DIGITS[usize::from(pair[0])], DIGITS[usize::from(pair[1])]);
            (hi != BAD && lo != BAD).then_some((hi << 4) | lo)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_hex_is_lowercase_two_digits_a_byte() {
        for n in 0..=70usize {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            let want: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(to_hex(&bytes), want, "{n} bytes");
        }
    }

    #[test]
    fn hex_round_trips_and_rejects_junk() {
        let bytes: [u8; 32] = core::array::from_fn(|i| (i * 37) as u8);
        let hex = to_hex(&bytes);
        assert_eq!(from_hex32(&hex), Some(bytes));
        assert_eq!(from_hex32(&hex.to_uppercase()), Some(bytes));
        assert_eq!(from_hex32(&hex[..62]), None);
        let mut bad = hex.clone().into_bytes();
        bad[17] = b'g';
        assert_eq!(from_hex32(std::str::from_utf8(&bad).unwrap()), None);
        assert_eq!(from_hex(&hex).as_deref(), Some(&bytes[..]));
        assert_eq!(from_hex(&hex[..63]), None);
        assert_eq!(from_hex(std::str::from_utf8(&bad).unwrap()), None);
        assert_eq!(from_hex(""), Some(Vec::new()));
    }
}
