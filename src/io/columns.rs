//! Typed access to Arrow columns of the widths users actually write (Utf8 or LargeUtf8 or views,
//! float or integer numbers), with errors that name the file and the column.

use std::fs::File;
use std::path::Path;

use anyhow::{bail, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{
    AnyDictionaryArray, Array, ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray,
    RecordBatch,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::append::append_short;
use crate::prefetch::prefetch_at;

/// A text column of any Arrow string layout, plain or dictionary-encoded (a pandas categorical,
/// or a Parquet dictionary kept as one, see `io::pages`).
pub struct TextColumn<'a> {
    /// The rows' values, or the dictionary's values that `dictionary` indexes.
    strings: Strings<'a>,
    dictionary: Option<Dictionary<'a>>,
}

/// The values of a string array of any layout.
enum Strings<'a> {
    Utf8(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
}

/// Which dictionary value each row takes.
struct Dictionary<'a> {
    /// The dictionary array.
    array: &'a dyn AnyDictionaryArray,
    /// The rows' nulls (taken once: asking the array is a call through its trait a row).
    nulls: Option<&'a NullBuffer>,
    /// Each row's index into the values (any for a null row).
    keys: Vec<usize>,
}

impl Dictionary<'_> {
    #[inline]
    fn is_valid(&self, i: usize) -> bool {
        self.nulls.is_none_or(|n| n.is_valid(i))
    }
}

impl<'a> Strings<'a> {
    fn of(a: &'a ArrayRef) -> Option<Self> {
        match a.data_type() {
            DataType::Utf8 => Some(Strings::Utf8(a.as_string::<i32>())),
            DataType::LargeUtf8 => Some(Strings::Large(a.as_string::<i64>())),
            DataType::Utf8View => Some(Strings::View(a.as_string_view())),
            _ => None,
        }
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Strings::Utf8(a) => a.is_valid(i).then(|| a.value(i)),
            Strings::Large(a) => a.is_valid(i).then(|| a.value(i)),
            Strings::View(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

impl<'a> TextColumn<'a> {
    fn of(a: &'a ArrayRef) -> Option<Self> {
        if let Some(array) = a.as_any_dictionary_opt() {
            return Some(TextColumn {
                strings: Strings::of(array.values())?,
                dictionary: Some(Dictionary {
                    array,
                    nulls: array.nulls(),
                    keys: array.normalized_keys(),
                }),
            });
        }
        Some(TextColumn {
            strings: Strings::of(a)?,
            dictionary: None,
        })
    }

    /// The value of row `i`, None if null.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a str> {
        match &self.dictionary {
            None => self.strings.get(i),
            Some(d) => d.is_valid(i).then(|| self.strings.get(d.keys[i]))?,
        }
    }

    /// Row `i`'s index into the column's dictionary: rows of equal index hold the same value.
    /// None for a plain column or a null row.
    #[inline]
    pub fn key(&self, i: usize) -> Option<usize> {
        let d = self.dictionary.as_ref()?;
        d.is_valid(i).then(|| d.keys[i])
    }

    /// Asks for the place of row `i`'s dictionary value (its offset) to be brought into cache, a
    /// first step ahead of [`TextColumn::prefetch_value`]; returns the row's index into the
    /// dictionary (any for a null row), None for a plain column or past the end.
    #[inline]
    pub fn prefetch_offset(&self, i: usize) -> Option<usize> {
        let k = *self.dictionary.as_ref()?.keys.get(i)?;
        match self.strings {
            Strings::Utf8(a) => prefetch_at(a.value_offsets().as_ptr().wrapping_add(k)),
            Strings::Large(a) => prefetch_at(a.value_offsets().as_ptr().wrapping_add(k)),
            Strings::View(a) => prefetch_at(a.views().as_ptr().wrapping_add(k)),
        }
        Some(k)
    }

    /// Asks for the bytes of row `i`'s dictionary value to be brought into cache (reading its
    /// offset, best fetched by [`TextColumn::prefetch_offset`] a few rows before); nothing for a
    /// plain column or past the end.
    #[inline]
    pub fn prefetch_value(&self, i: usize) {
        let Some(&k) = self.dictionary.as_ref().and_then(|d| d.keys.get(i)) else {
            return;
        };
        let (start, values) = match self.strings {
            Strings::Utf8(a) => (
                a.value_offsets().get(k).map(|&o| o as usize),
                a.value_data(),
            ),
            Strings::Large(a) => (
                a.value_offsets().get(k).map(|&o| o as usize),
                a.value_data(),
            ),
            // a host name of up to 12 bytes is in its view, fetched by `prefetch_offset`
            Strings::View(_) => return,
        };
        if let Some(start) = start {
            prefetch_at(values.as_ptr().wrapping_add(start));
        }
    }

    /// The dictionary's values (the batches of one Parquet column chunk share them), None for a
    /// plain column.
    pub fn dictionary_values(&self) -> Option<&'a ArrayRef> {
        self.dictionary.as_ref().map(|d| d.array.values())
    }

    /// Value `k` of the column's dictionary (None if null or not a dictionary column).
    pub fn dictionary_value(&self, k: usize) -> Option<&'a str> {
        self.dictionary.as_ref()?;
        self.strings.get(k)
    }

    /// How many values the column's dictionary has (0 for a plain column).
    pub fn dictionary_len(&self) -> usize {
        self.dictionary
            .as_ref()
            .map_or(0, |d| d.array.values().len())
    }
}

/// A numeric column read as f64.
pub enum NumberColumn<'a> {
    F64(&'a arrow_array::Float64Array),
    F32(&'a arrow_array::Float32Array),
    I64(&'a arrow_array::Int64Array),
    I32(&'a arrow_array::Int32Array),
    U64(&'a arrow_array::UInt64Array),
    U32(&'a arrow_array::UInt32Array),
}

impl NumberColumn<'_> {
    /// The value of row `i` as f64, None if null.
    #[inline]
    pub fn get(&self, i: usize) -> Option<f64> {
        match self {
            NumberColumn::F64(a) => a.is_valid(i).then(|| a.value(i)),
            NumberColumn::F32(a) => a.is_valid(i).then(|| a.value(i) as f64),
            NumberColumn::I64(a) => a.is_valid(i).then(|| a.value(i) as f64),
            NumberColumn::I32(a) => a.is_valid(i).then(|| a.value(i) as f64),
            NumberColumn::U64(a) => a.is_valid(i).then(|| a.value(i) as f64),
            NumberColumn::U32(a) => a.is_valid(i).then(|| a.value(i) as f64),
        }
    }

    /// Calls `f(i, value)` for every row `i` in order (None: null), as f64: the column's type and
    /// whether it has nulls settled once, not a row at a time as [`NumberColumn::get`] does.
    #[inline]
    pub fn each(&self, f: impl FnMut(usize, Option<f64>)) {
        match self {
            NumberColumn::F64(a) => each_of(a, f, |v| v),
            NumberColumn::F32(a) => each_of(a, f, f64::from),
            NumberColumn::I64(a) => each_of(a, f, |v| v as f64),
            NumberColumn::I32(a) => each_of(a, f, f64::from),
            NumberColumn::U64(a) => each_of(a, f, |v| v as f64),
            NumberColumn::U32(a) => each_of(a, f, f64::from),
        }
    }
}

/// [`NumberColumn::each`] on one array type, its values converted by `to_f64`.
#[inline]
fn each_of<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    mut f: impl FnMut(usize, Option<f64>),
    to_f64: impl Fn(T::Native) -> f64,
) {
    let values = a.values().iter().map(|&v| to_f64(v));
    match a.nulls() {
        None => values.enumerate().for_each(|(i, v)| f(i, Some(v))),
        Some(nulls) => values
            .enumerate()
            .for_each(|(i, v)| f(i, nulls.is_valid(i).then_some(v))),
    }
}

/// Opens `path` for reading as Parquet; `advice` (e.g. "; CSV files must end in .csv") ends the
/// error when the file is not readable Parquet.
pub fn open_parquet(path: &Path, advice: &str) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    ParquetRecordBatchReaderBuilder::try_new(file).with_context(|| {
        format!(
            "{}: not a readable Parquet file (truncated or corrupt?){advice}",
            path.display()
        )
    })
}

/// Checks that `schema` has column `name` of an accepted kind; `Ok(false)` if absent and optional.
pub fn check_column(
    file: &Path,
    schema: &Schema,
    name: &str,
    kind: Kind,
    required: bool,
) -> Result<bool> {
    let Ok(field) = schema.field_with_name(name) else {
        if !required {
            return Ok(false);
        }
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        bail!(
            "{}: no column '{name}' (it has: {}). Every page file needs url, importance and change_rate; \
             host and complete_obs are optional.",
            file.display(),
            names.join(", ")
        );
    };
    let ok = match kind {
        Kind::Text => is_text(field.data_type()),
        Kind::Number => matches!(
            field.data_type(),
            DataType::Float64
                | DataType::Float32
                | DataType::Int64
                | DataType::Int32
                | DataType::UInt64
                | DataType::UInt32
        ),
        Kind::Bool => matches!(field.data_type(), DataType::Boolean),
        Kind::Timestamp => matches!(field.data_type(), DataType::Timestamp(_, _)),
    };
    if !ok {
        bail!(
            "{}: column '{name}' has type {}; expected {}",
            file.display(),
            field.data_type(),
            match kind {
                Kind::Text => "a string (utf8, or a dictionary of strings)",
                Kind::Number => "a number (float64, float32 or an integer)",
                Kind::Bool => "a boolean",
                Kind::Timestamp => "a timestamp",
            }
        );
    }
    Ok(true)
}

/// Whether `t` is a string layout [`TextColumn`] reads: plain, or a dictionary of plain strings.
fn is_text(t: &DataType) -> bool {
    let plain =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    match t {
        DataType::Dictionary(key, values) => key.is_dictionary_key_type() && plain(values),
        t => plain(t),
    }
}

/// The kinds of column we accept.
#[derive(Clone, Copy)]
pub enum Kind {
    Text,
    Number,
    Bool,
    Timestamp,
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> Option<&'a ArrayRef> {
    batch
        .schema_ref()
        .index_of(name)
        .ok()
        .map(|i| batch.column(i))
}

/// Text column `name` of `batch` (None if the batch has no such column).
pub fn text<'a>(batch: &'a RecordBatch, name: &str) -> Option<TextColumn<'a>> {
    TextColumn::of(column(batch, name)?)
}

/// Numeric column `name` of `batch`.
pub fn number<'a>(batch: &'a RecordBatch, name: &str) -> Option<NumberColumn<'a>> {
    let a = column(batch, name)?;
    match a.data_type() {
        DataType::Float64 => Some(NumberColumn::F64(a.as_primitive::<Float64Type>())),
        DataType::Float32 => Some(NumberColumn::F32(a.as_primitive::<Float32Type>())),
        DataType::Int64 => Some(NumberColumn::I64(a.as_primitive::<Int64Type>())),
        DataType::Int32 => Some(NumberColumn::I32(a.as_primitive::<Int32Type>())),
        DataType::UInt64 => Some(NumberColumn::U64(a.as_primitive::<UInt64Type>())),
        DataType::UInt32 => Some(NumberColumn::U32(a.as_primitive::<UInt32Type>())),
        _ => None,
    }
}

/// Timestamp column `name` of `batch` as microseconds since the epoch (any unit; a time zone, if
/// any, names the instant's zone, not a shift).
pub fn timestamp_us(batch: &RecordBatch, name: &str) -> Option<Vec<Option<i64>>> {
    use arrow_array::types::{
        TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
        TimestampSecondType,
    };
    use arrow_schema::TimeUnit;
    let a = column(batch, name)?;
    let DataType::Timestamp(unit, _) = a.data_type() else {
        return None;
    };
    fn each<T: arrow_array::ArrowPrimitiveType<Native = i64>>(
        a: &ArrayRef,
        f: impl Fn(i64) -> Option<i64>,
    ) -> Vec<Option<i64>> {
        let p = a.as_primitive::<T>();
        (0..p.len())
            .map(|i| p.is_valid(i).then(|| f(p.value(i))).flatten())
            .collect()
    }
    Some(match unit {
        TimeUnit::Second => each::<TimestampSecondType>(a, |v| v.checked_mul(1_000_000)),
        TimeUnit::Millisecond => each::<TimestampMillisecondType>(a, |v| v.checked_mul(1_000)),
        TimeUnit::Microsecond => each::<TimestampMicrosecondType>(a, Some),
        TimeUnit::Nanosecond => each::<TimestampNanosecondType>(a, |v| Some(v.div_euclid(1_000))),
    })
}

/// Boolean column `name` of `batch`.
pub fn boolean<'a>(batch: &'a RecordBatch, name: &str) -> Option<&'a BooleanArray> {
    column(batch, name).and_then(|a| a.as_boolean_opt())
}

/// A UTF-8 column assembled from bytes and validated once, in bulk (not row by row).
#[derive(Default)]
pub struct Utf8Builder {
    values: Vec<u8>,
    lengths: Vec<usize>,
}

impl Utf8Builder {
    /// Room for `rows` values of `bytes` bytes in all.
    pub fn with_capacity(rows: usize, bytes: usize) -> Self {
        Utf8Builder {
            values: Vec::with_capacity(bytes),
            lengths: Vec::with_capacity(rows),
        }
    }

    /// Makes room for `rows` more values of `bytes` bytes in all.
    pub fn reserve(&mut self, rows: usize, bytes: usize) {
        self.values.reserve(bytes);
        self.lengths.reserve(rows);
    }

    /// Appends a value (UTF-8 bytes; checked in [`Utf8Builder::finish`]).
    pub fn push(&mut self, bytes: &[u8]) {
        append_short(&mut self.values, bytes);
        self.lengths.push(bytes.len());
    }

    /// Appends a value given in pieces, one after the other.
    pub fn push_parts(&mut self, parts: [&[u8]; 3]) {
        let start = self.values.len();
        for part in parts {
            append_short(&mut self.values, part);
        }
        self.lengths.push(self.values.len() - start);
    }

    /// The column, the builder emptied (its text now the column's); fails if the bytes are not
    /// UTF-8.
    pub fn finish(&mut self) -> Result<arrow_array::StringArray> {
        let offsets = arrow_buffer::OffsetBuffer::<i32>::from_lengths(self.lengths.drain(..));
        Ok(arrow_array::StringArray::try_new(
            offsets,
            arrow_buffer::Buffer::from_vec(std::mem::take(&mut self.values)),
            None,
        )?)
    }

    /// Where the text buffer starts (for tests of its reuse).
    #[cfg(test)]
    pub fn values_ptr(&self) -> *const u8 {
        self.values.as_ptr()
    }

    /// Takes back the text of `column` (finished by a builder, and no longer shared) as room for
    /// the next values: a writer's next row group is then written into pages already resident.
    pub fn take_back(&mut self, column: ArrayRef) {
        let Some(array) = column.as_string_opt::<i32>().cloned() else {
            return;
        };
        drop(column);
        let (_, values, _) = array.into_parts();
        if let Some(v) = emptied(values) {
            self.values = v;
        }
    }
}

/// The values of `column`, a primitive array made from a vector and no longer shared, as that
/// vector emptied (None where it is shared, or of another type): a writer's room for its next
/// row group, in pages already resident.
pub fn taken_back<T: ArrowPrimitiveType>(column: ArrayRef) -> Option<Vec<T::Native>> {
    let array = column.as_primitive_opt::<T>()?.clone();
    drop(column);
    let (_, values, _) = array.into_parts();
    emptied(values.into_inner())
}

/// `buffer` as the vector it was made from, emptied, if no one else holds it.
fn emptied<T: arrow_buffer::ArrowNativeType>(buffer: arrow_buffer::Buffer) -> Option<Vec<T>> {
    let mut v = buffer.into_vec::<T>().ok()?;
    v.clear();
    Some(v)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{DictionaryArray, LargeStringArray, StringArray, StringViewArray};

    use super::*;

    #[test]
    fn prefetching_a_row_gives_its_dictionary_index_and_never_reads_past_the_end() {
        let values = [
            Some("b.example"),
            None,
            Some("a.example"),
            Some("b.example"),
        ];
        let dictionary: DictionaryArray<Int32Type> = values.iter().copied().collect();
        let wanted: Vec<Option<usize>> = (0..values.len())
            .map(|i| {
                dictionary
                    .is_valid(i)
                    .then(|| dictionary.keys().value(i) as usize)
            })
            .collect();
        let with_values = |v: ArrayRef| -> ArrayRef {
            Arc::new(DictionaryArray::new(dictionary.keys().clone(), v))
        };
        let layouts: [ArrayRef; 3] = [
            with_values(Arc::new(StringArray::from(vec!["b.example", "a.example"]))),
            with_values(Arc::new(LargeStringArray::from(vec![
                "b.example",
                "a.example",
            ]))),
            with_values(Arc::new(StringViewArray::from(vec![
                "b.example",
                "a.example",
            ]))),
        ];
        for array in &layouts {
            let column = TextColumn::of(array).unwrap();
            for (i, want) in wanted.iter().enumerate() {
                // a null row's index is any; a valid row's is its value's
                let got = column.prefetch_offset(i);
                assert!(got.is_some());
                if want.is_some() {
                    assert_eq!(got, *want, "{:?} row {i}", array.data_type());
                    assert_eq!(column.key(i), *want);
                }
                column.prefetch_value(i);
            }
            for past in [values.len(), values.len() + 100, usize::MAX] {
                assert_eq!(column.prefetch_offset(past), None);
                column.prefetch_value(past);
            }
        }
        let plain: ArrayRef = Arc::new(StringArray::from(vec!["a.example"]));
        let column = TextColumn::of(&plain).unwrap();
        assert_eq!(column.prefetch_offset(0), None);
        column.prefetch_value(0);
    }
}
