//! URL claims: a row's URL identity, sent to the URL's judge, which finds the rows that repeat a
//! URL whatever their hosts say (a URL listed under two hosts would otherwise be fetched twice,
//! once under the wrong host's cap). 24 bytes a row, keys only: the rows themselves travel to their
//! host's worker. Which rows claim, and who judges: [`crate::job::url_dedupe`].

use serde::{Deserialize, Serialize};

use crate::io::pages::Origin;

/// Rows of one file past which an origin no longer packs into 40 bits.
pub const MAX_ROWS_PER_FILE: u64 = 1 << 40;
/// Input files past which an origin no longer packs into 24 bits.
pub const MAX_FILES: u64 = 1 << 24;

/// One row's claim on a URL: the URL's 96-bit identity, the row's origin (file and row, packed),
/// and the worker holding the row (its host's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub url_high: u64,
    pub url_low: u32,
    pub holder: u32,
    pub origin: u64,
}

impl Claim {
    /// The claim of a row with URL identity `url_id` from `origin`, held by worker `holder`.
    #[inline]
    pub fn new(url_id: u128, origin: Origin, holder: u32) -> Self {
        Claim {
            url_high: (url_id >> 64) as u64,
            url_low: (url_id >> 32) as u32,
            holder,
            origin: pack(origin),
        }
    }

    /// The URL's 96-bit identity (high, low).
    #[inline]
    pub fn url(&self) -> (u64, u32) {
        (self.url_high, self.url_low)
    }
}

/// (file, row) in one u64: 24 bits of file, 40 of row; order is (file, row) order.
#[inline]
pub fn pack(o: Origin) -> u64 {
    ((o.file as u64) << 40) | o.row
}

/// The origin of a packed one.
#[inline]
pub fn unpack(p: u64) -> Origin {
    Origin {
        file: (p >> 40) as u32,
        row: p & (MAX_ROWS_PER_FILE - 1),
    }
}

/// Claims in transit to the worker that judges them.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ClaimBatch {
    pub dest: u32,
    pub claims: Vec<Claim>,
}

/// Rows that lost their URL to an earlier row, to the worker holding them (packed origins).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LoserBatch {
    pub dest: u32,
    pub origins: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_keeps_origin_order() {
        let a = Origin {
            file: 3,
            row: MAX_ROWS_PER_FILE - 1,
        };
        let b = Origin { file: 4, row: 0 };
        assert_eq!(unpack(pack(a)), a);
        assert!(pack(a) < pack(b));
        assert_eq!(std::mem::size_of::<Claim>(), 24);
    }
}
