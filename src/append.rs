//! Appending short byte strings (URL rests, host names) and short runs of values to growing
//! buffers: a call of the C library's `memcpy` for each few dozen bytes was a fifth of arranging
//! the 10M-URL bench.

/// Runs of values this short [`extend_short`] copies value by value: `extend_from_slice` calls
/// `memcpy` for each, which on the runs of single-page hosts (3 in 10 URLs of the host-heavy
/// bench) was most of the copy of a partition's columns.
const SHORT_RUN: usize = 4;

/// Appends `values` to `v`: a run of a few value by value, a longer one by `memcpy`.
#[inline]
pub fn extend_short<T: Copy>(v: &mut Vec<T>, values: &[T]) {
    if values.len() <= SHORT_RUN {
        for &x in values {
            v.push(x);
        }
    } else {
        v.extend_from_slice(values);
    }
}

/// Longest string [`append_short`] copies itself; longer ones go to `memcpy`, whose call then
/// costs little beside the copy.
const SHORT: usize = 32;

/// Appends `bytes` to `v`, those of up to 32 bytes by two overlapping words of the largest
/// width that fits (as `memcpy` does inside, without the call and its dispatch).
#[inline]
pub fn append_short(v: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if n > SHORT {
        v.extend_from_slice(bytes);
        return;
    }
    v.reserve(n);
    let len = v.len();
    // SAFETY: `reserve` made room for `n` more bytes past `len`. Every read is within `bytes` and
    // every write within that room (the two words overlap unless `n` is twice their width), and
    // all of `len..len + n` is written before the length covers it.
    unsafe {
        let (src, dst) = (bytes.as_ptr(), v.as_mut_ptr().add(len));
        if n >= 16 {
            copy_two::<[u8; 16]>(src, dst, n);
        } else if n >= 8 {
            copy_two::<u64>(src, dst, n);
        } else if n >= 4 {
            copy_two::<u32>(src, dst, n);
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
        v.set_len(len + n);
    }
}

/// Copies `n` bytes (`size_of::<W>()` <= n <= twice that) from `src` to `dst` as the first and
/// the last word of `n`.
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes.
#[inline(always)]
unsafe fn copy_two<W: Copy>(src: *const u8, dst: *mut u8, n: usize) {
    let w = std::mem::size_of::<W>();
    let (first, last) = (
        src.cast::<W>().read_unaligned(),
        src.add(n - w).cast::<W>().read_unaligned(),
    );
    dst.cast::<W>().write_unaligned(first);
    dst.add(n - w).cast::<W>().write_unaligned(last);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_as_extend_from_slice_at_every_length_and_offset() {
        let source: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
        for start in 0..8 {
            for n in 0..=SHORT + 9 {
                for already in [0usize, 1, 5, 31] {
                    let bytes = &source[start..start + n];
                    let mut got: Vec<u8> = source[100..100 + already].to_vec();
                    let mut want = got.clone();
                    append_short(&mut got, bytes);
                    want.extend_from_slice(bytes);
                    assert_eq!(got, want, "start {start}, {n} bytes after {already}");
                    // and again onto a buffer exactly full (the append must grow it)
                    got.shrink_to_fit();
                    append_short(&mut got, bytes);
                    want.extend_from_slice(bytes);
                    assert_eq!(got, want, "full buffer, start {start}, {n} bytes");
                }
            }
        }
    }
}
