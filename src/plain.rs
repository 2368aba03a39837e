//! Columns of numbers between processes as one byte string each (`#[serde(with =
//! "crate::plain")]`, and [`bools`] for flags): bincode, which timely encodes every record
//! crossing a process with, writes and reads a `Vec<f64>` one element at a time through its
//! writer, and sizes it first by a second walk over every element. As one byte string a column is
//! sized by its length and copied whole, and decoded into a vector of exactly its length (bincode
//! grew one by doubling from a capped guess).
//!
//! The bytes are the values' little-endian bytes, the order bincode gives them: on a
//! little-endian machine the column's own memory, copied as is.

use std::fmt;
use std::marker::PhantomData;

use bytemuck::Pod;
use serde::de::{Error, Visitor};
use serde::{Deserializer, Serializer};

/// A number a column holds: plain old data, of a fixed byte order on the wire.
pub trait Number: Pod {
    /// The value with its bytes in little-endian order (on a little-endian machine, itself); its
    /// own inverse.
    fn to_le(self) -> Self;
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Number for $t {
            #[inline]
            fn to_le(self) -> Self {
                <$t>::to_le(self)
            }
        }
    )*};
}
integer!(u8, u32, u64, i64);

impl Number for f64 {
    #[inline]
    fn to_le(self) -> Self {
        f64::from_bits(self.to_bits().to_le())
    }
}

/// Encodes `values` as one byte string.
pub fn serialize<T: Number, S: Serializer>(values: &[T], s: S) -> Result<S::Ok, S::Error> {
    if cfg!(target_endian = "little") {
        s.serialize_bytes(bytemuck::cast_slice(values))
    } else {
        let le: Vec<T> = values.iter().map(|&v| v.to_le()).collect();
        s.serialize_bytes(bytemuck::cast_slice(&le))
    }
}

/// Decodes a column [`serialize`] encoded.
pub fn deserialize<'de, T: Number, D: Deserializer<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    d.deserialize_bytes(Column(PhantomData))
}

struct Column<T>(PhantomData<T>);

impl<T: Number> Visitor<'_> for Column<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a byte string of {}-byte numbers", size_of::<T>())
    }

    fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<Vec<T>, E> {
        if !bytes.len().is_multiple_of(size_of::<T>()) {
            return Err(E::invalid_length(bytes.len(), &self));
        }
        // one pass, into a vector allocated once at its length (the bytes need not be aligned
        // for `T`; a vector zeroed first and copied into was set twice: calloc's memset)
        Ok(bytes
            .chunks_exact(size_of::<T>())
            .map(|b| bytemuck::pod_read_unaligned::<T>(b).to_le())
            .collect())
    }
}

/// A column of flags as one byte string, a byte a flag (0 or 1, as bincode writes a bool).
pub mod bools {
    use super::*;

    /// Encodes `flags` as one byte string.
    pub fn serialize<S: Serializer>(flags: &[bool], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytemuck::cast_slice(flags))
    }

    /// Decodes a column [`serialize`] encoded; a byte other than 0 or 1 is an error.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<bool>, D::Error> {
        d.deserialize_bytes(Flags)
    }

    struct Flags;

    impl Visitor<'_> for Flags {
        type Value = Vec<bool>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a byte string of flags, 0 or 1")
        }

        fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<Vec<bool>, E> {
            bytemuck::checked::try_cast_slice::<u8, bool>(bytes)
                .map(<[bool]>::to_vec)
                .map_err(|_| E::custom("a flag byte other than 0 or 1"))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    /// A record of every column kind, once plain and once as bincode encodes it by default.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Plain {
        #[serde(with = "super")]
        f: Vec<f64>,
        #[serde(with = "super")]
        i: Vec<i64>,
        #[serde(with = "super")]
        u: Vec<u32>,
        #[serde(with = "super")]
        w: Vec<u64>,
        #[serde(with = "super")]
        b: Vec<u8>,
        #[serde(with = "super::bools")]
        flags: Vec<bool>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct ElementWise {
        f: Vec<f64>,
        i: Vec<i64>,
        u: Vec<u32>,
        w: Vec<u64>,
        b: Vec<u8>,
        flags: Vec<bool>,
    }

    fn sample(n: usize) -> Plain {
        Plain {
            f: (0..n)
                .map(|k| match k % 5 {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => f64::INFINITY,
                    _ => k as f64 / 7.0,
                })
                .collect(),
            i: (0..n as i64)
                .map(|k| k * -1_000_003 + i64::MIN / 3)
                .collect(),
            u: (0..n as u32)
                .map(|k| k.wrapping_mul(2_654_435_761))
                .collect(),
            w: (0..n as u64).map(|k| k << 40 | k).collect(),
            b: (0..n).map(|k| k as u8).collect(),
            flags: (0..n).map(|k| k % 3 == 0).collect(),
        }
    }

    #[test]
    fn a_column_comes_back_bit_for_bit() {
        for n in [0, 1, 7, 1000] {
            let want = sample(n);
            let got: Plain = bincode::deserialize(&bincode::serialize(&want).unwrap()).unwrap();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.f), bits(&want.f), "{n} values");
            assert_eq!((got.i, got.u, got.w), (want.i, want.u, want.w));
            assert_eq!((got.b, got.flags), (want.b, want.flags));
        }
    }

    #[test]
    fn the_bytes_are_those_bincode_writes_element_by_element_after_the_same_length() {
        // bincode writes a sequence's length, then each element little-endian; a byte string,
        // its length in bytes then the bytes: the same bytes but for the length's count
        let p = sample(9);
        let e = ElementWise {
            f: p.f.clone(),
            i: p.i.clone(),
            u: p.u.clone(),
            w: p.w.clone(),
            b: p.b.clone(),
            flags: p.flags.clone(),
        };
        let plain = bincode::serialize(&p).unwrap();
        let wise = bincode::serialize(&e).unwrap();
        assert_eq!(plain.len(), wise.len());
        let mut at = 0;
        for size in [8, 8, 4, 8, 1, 1] {
            let len = |b: &[u8]| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
            assert_eq!(len(&plain), 9 * size as u64);
            assert_eq!(len(&wise), 9);
            at += 8;
            let end = at + 9 * size;
            assert_eq!(plain[at..end], wise[at..end]);
            at = end;
        }
        assert_eq!(at, plain.len());
    }

    #[test]
    fn a_broken_column_is_an_error_not_a_wrong_value() {
        #[derive(Debug, Serialize, Deserialize)]
        struct Bytes(#[serde(with = "serde_bytes")] Vec<u8>);
        #[derive(Debug, Deserialize)]
        struct Numbers(#[serde(with = "super")] Vec<f64>);
        #[derive(Debug, Deserialize)]
        struct Flags(#[serde(with = "super::bools")] Vec<bool>);
        let seven = bincode::serialize(&Bytes(vec![1; 7])).unwrap();
        let err = bincode::deserialize::<Numbers>(&seven).unwrap_err();
        assert!(err.to_string().contains("8-byte numbers"), "{err}");
        let eight = bincode::serialize(&Bytes(1.5f64.to_le_bytes().to_vec())).unwrap();
        assert_eq!(bincode::deserialize::<Numbers>(&eight).unwrap().0, [1.5]);
        let three = bincode::serialize(&Bytes(vec![0, 1, 2])).unwrap();
        let err = bincode::deserialize::<Flags>(&three).unwrap_err();
        assert!(err.to_string().contains("other than 0 or 1"), "{err}");
        let two = bincode::serialize(&Bytes(vec![1, 0])).unwrap();
        assert_eq!(
            bincode::deserialize::<Flags>(&two).unwrap().0,
            [true, false]
        );
    }
}
