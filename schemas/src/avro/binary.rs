//! Avro binary encoding primitives (sans-io: bytes in, values out).
//!
//! [`AvroCodec`] is implemented for the primitive Rust types used by the records and, through
//! the [`avro_record!`](crate::avro_record) and [`avro_enum!`](crate::avro_enum) macros, for
//! every record and enum. Field order in those macros is the order of the `.avsc` files; the
//! tests in `tests/avro_conformance.rs` check both directions against apache-avro.

use std::collections::BTreeMap;

use super::DecodeError;

/// A type with an Avro binary form.
pub trait AvroCodec: Sized {
    /// Appends the Avro binary form of `self` to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads one value, consuming exactly its bytes.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// Writes a zig-zag varint (Avro `int` and `long`).
#[inline]
pub fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Bytes [`write_long`] writes for `v` (its zigzag varint), without writing them.
#[inline]
pub fn long_len(v: i64) -> usize {
    let n = ((v << 1) ^ (v >> 63)) as u64;
    // 7 bits a byte; zero takes one byte.
    (64 - (n | 1).leading_zeros() as usize).div_ceil(7)
}

/// Writes Avro `bytes` / `string`: a length then the bytes.
#[inline]
pub fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    if b.len() < 64 {
        // Most strings: a one-byte length (zigzag 2n < 128), one reservation for both.
        out.reserve(1 + b.len());
        out.push((b.len() as u8) << 1);
    } else {
        write_long(out, b.len() as i64);
    }
    out.extend_from_slice(b);
}

/// A bounded reader over one Avro datum.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes(self.remaining()))
        }
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads a zig-zag varint of at most 10 bytes.
    #[inline]
    pub fn read_long(&mut self) -> Result<i64, DecodeError> {
        // Most longs here (lengths, counts, branch and symbol indexes) take one byte.
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            let n = u64::from(b);
            return Ok(((n >> 1) as i64) ^ -((n & 1) as i64));
        }
        let mut n: u64 = 0;
        for i in 0..10 {
            let b = *self.take(1)?.first().ok_or(DecodeError::Truncated)?;
            if i == 9 && b > 1 {
                return Err(DecodeError::BadVarint);
            }
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(((n >> 1) as i64) ^ -((n & 1) as i64));
            }
        }
        Err(DecodeError::BadVarint)
    }

    /// Reads an Avro `int` (a varint that must fit 32 bits).
    #[inline]
    pub fn read_int(&mut self) -> Result<i32, DecodeError> {
        i32::try_from(self.read_long()?).map_err(|_| DecodeError::BadVarint)
    }

    /// Reads a length prefix and checks it against the remaining bytes.
    #[inline]
    fn read_len(&mut self) -> Result<usize, DecodeError> {
        let n = self.read_long()?;
        let n = usize::try_from(n).map_err(|_| DecodeError::BadLength)?;
        if n > self.remaining() {
            return Err(DecodeError::Truncated);
        }
        Ok(n)
    }

    /// Reads Avro `bytes`.
    #[inline]
    pub fn read_bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.read_len()?;
        self.take(n)
    }

    /// Reads an Avro `string` (must be UTF-8).
    #[inline]
    pub fn read_str(&mut self) -> Result<&'a str, DecodeError> {
        std::str::from_utf8(self.read_bytes()?).map_err(|_| DecodeError::InvalidUtf8)
    }

    /// Reads the count of the next array or map block; a negative count is followed by the
    /// block's byte size, which is skipped. The count is bounded by the bytes left, since every
    /// item of every kledger schema takes at least one byte.
    #[inline]
    pub fn read_block_count(&mut self) -> Result<usize, DecodeError> {
        let n = self.read_long()?;
        let n = if n < 0 {
            let _block_bytes = self.read_long()?;
            n.checked_neg().ok_or(DecodeError::BadLength)?
        } else {
            n
        };
        let n = usize::try_from(n).map_err(|_| DecodeError::BadLength)?;
        if n > self.remaining() {
            return Err(DecodeError::Truncated);
        }
        Ok(n)
    }

    /// Reads a union branch index and checks it against the branch count.
    #[inline]
    pub fn read_union_index(&mut self, branches: usize) -> Result<usize, DecodeError> {
        let i = self.read_long()?;
        usize::try_from(i)
            .ok()
            .filter(|i| *i < branches)
            .ok_or(DecodeError::BadUnion(i))
    }

    /// Reads an enum symbol index and checks it against the symbol count.
    #[inline]
    pub fn read_enum_index(&mut self, symbols: usize) -> Result<usize, DecodeError> {
        let i = self.read_long()?;
        usize::try_from(i)
            .ok()
            .filter(|i| *i < symbols)
            .ok_or(DecodeError::BadEnum(i))
    }

    #[inline]
    fn read_fixed<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
}

impl AvroCodec for String {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        write_bytes(out, self.as_bytes());
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_str().map(str::to_owned)
    }
}

impl AvroCodec for i64 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        write_long(out, *self);
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_long()
    }
}

impl AvroCodec for i32 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        write_long(out, i64::from(*self));
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_int()
    }
}

impl AvroCodec for bool {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match r.take(1)? {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(DecodeError::BadBool),
        }
    }
}

impl AvroCodec for f64 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_fixed::<8>().map(f64::from_le_bytes)
    }
}

impl AvroCodec for f32 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_fixed::<4>().map(f32::from_le_bytes)
    }
}

/// `Option<T>` is the union `["null", T]`.
impl<T: AvroCodec> AvroCodec for Option<T> {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => write_long(out, 0),
            Some(v) => {
                write_long(out, 1);
                v.encode(out);
            }
        }
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match r.read_union_index(2)? {
            0 => Ok(None),
            _ => T::decode(r).map(Some),
        }
    }
}

/// `Vec<T>` is an Avro array, written as one block.
impl<T: AvroCodec> AvroCodec for Vec<T> {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        if !self.is_empty() {
            write_long(out, self.len() as i64);
            for v in self {
                v.encode(out);
            }
        }
        write_long(out, 0);
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut items = Vec::new();
        loop {
            let n = r.read_block_count()?;
            if n == 0 {
                return Ok(items);
            }
            items.reserve(n);
            for _ in 0..n {
                items.push(T::decode(r)?);
            }
        }
    }
}

/// `BTreeMap<String, V>` is an Avro map, written in key order (deterministic bytes).
impl<V: AvroCodec> AvroCodec for BTreeMap<String, V> {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        if !self.is_empty() {
            write_long(out, self.len() as i64);
            for (k, v) in self {
                k.encode(out);
                v.encode(out);
            }
        }
        write_long(out, 0);
    }
    #[inline]
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut map = BTreeMap::new();
        loop {
            let n = r.read_block_count()?;
            if n == 0 {
                return Ok(map);
            }
            for _ in 0..n {
                let k = String::decode(r)?;
                let v = V::decode(r)?;
                if map.insert(k, v).is_some() {
                    return Err(DecodeError::DuplicateMapKey);
                }
            }
        }
    }
}

/// Implements [`AvroCodec`] for a record: its fields in schema order.
#[macro_export]
macro_rules! avro_record {
    ($ty:ident { $($field:ident),* $(,)? }) => {
        impl $crate::avro::AvroCodec for $ty {
            #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
                $( $crate::avro::AvroCodec::encode(&self.$field, out); )*
            }
            #[inline]
            fn decode(r: &mut $crate::avro::Reader<'_>) -> Result<Self, $crate::avro::DecodeError> {
                Ok(Self { $( $field: $crate::avro::AvroCodec::decode(r)?, )* })
            }
        }
    };
}

/// Declares a unit-only enum whose JSON form and Avro symbols are its snake_case names, in
/// declaration order (the Avro symbol index).
#[macro_export]
macro_rules! avro_enum {
    ($(#[$meta:meta])* $vis:vis enum $ty:ident { $($(#[$vmeta:meta])* $variant:ident = $sym:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        $vis enum $ty {
            $( $(#[$vmeta])* #[serde(rename = $sym)] $variant ),+
        }

        impl $ty {
            /// Every symbol, in Avro order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The stable symbol (JSON and Avro).
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $sym),+ }
            }

            /// The symbol's Avro index.
            pub fn index(self) -> usize {
                self as usize
            }

            /// Parses a symbol.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($sym => Some($ty::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::avro::AvroCodec for $ty {
            #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
                $crate::avro::write_long(out, self.index() as i64);
            }
            #[inline]
            fn decode(r: &mut $crate::avro::Reader<'_>) -> Result<Self, $crate::avro::DecodeError> {
                let i = r.read_enum_index(Self::ALL.len())?;
                Ok(Self::ALL[i])
            }
        }
    };
}

#[cfg(test)]
mod long_len_tests {
    use super::{long_len, write_bytes, write_long};

    #[test]
    fn write_bytes_is_a_long_length_then_the_bytes() {
        for n in [0usize, 1, 62, 63, 64, 65, 127, 128, 300, 20_000] {
            let b: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let mut want = vec![9u8];
            write_long(&mut want, n as i64);
            want.extend_from_slice(&b);
            let mut out = vec![9u8];
            write_bytes(&mut out, &b);
            assert_eq!(out, want, "{n}");
        }
    }

    /// Every long reads back as written, one-byte ones (the fast path) and wider ones alike,
    /// each consuming exactly its bytes; a varint cut short or over ten bytes is refused.
    #[test]
    fn read_long_reads_what_write_long_writes() {
        use super::{DecodeError, Reader};
        let mut probes = vec![0i64, 1, -1, 63, -64, 64, -65, i64::MAX, i64::MIN];
        for shift in 0..63 {
            let b = 1i64 << shift;
            probes.extend([b, b - 1, -b, -b - 1]);
        }
        let mut all = Vec::new();
        for v in &probes {
            write_long(&mut all, *v);
        }
        let mut r = Reader::new(&all);
        for v in &probes {
            assert_eq!(r.read_long(), Ok(*v));
        }
        assert_eq!(r.remaining(), 0);
        assert_eq!(
            Reader::new(&[0x80]).read_long(),
            Err(DecodeError::Truncated)
        );
        assert_eq!(Reader::new(&[]).read_long(), Err(DecodeError::Truncated));
        assert_eq!(
            Reader::new(&[0xff; 11]).read_long(),
            Err(DecodeError::BadVarint)
        );
    }

    #[test]
    fn long_len_is_what_write_long_writes() {
        let mut probes = vec![0i64, 1, -1, 63, -64, 64, -65, i64::MAX, i64::MIN];
        for shift in 0..64 {
            let b = 1i64 << shift;
            probes.extend([b, b.wrapping_sub(1), b.wrapping_add(1)]);
            probes.extend([b.wrapping_neg(), b.wrapping_neg().wrapping_sub(1)]);
            probes.push(b.wrapping_neg().wrapping_add(1));
        }
        for v in probes {
            let mut out = Vec::new();
            write_long(&mut out, v);
            assert_eq!(long_len(v), out.len(), "{v}");
        }
    }
}
