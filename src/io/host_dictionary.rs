//! A `host` column read as a dictionary: each row's politeness key worked out once per distinct
//! host of a row group rather than once per row.
//!
//! Why: Parquet writers (Spark, DuckDB, pyarrow, `revisit gen`) store a host column
//! dictionary-encoded: a row group of 131K rows names some 30K hosts. Read as plain strings, every
//! row's host was copied out of the dictionary, checked and normalised, hashed and looked up in the
//! reader's cache of batch entries: a quarter of the read phase's time in a profile of 10M URLs.
//! Kept as a dictionary, a row is an index, and [`HostToken`] lets the reader's caller remember what
//! it made of each index.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::basic::{Encoding, PageType};
use parquet::file::metadata::ColumnChunkMetaData;

use super::columns::TextColumn;
use super::host_name::is_blank;
use super::pages::Reason;
use super::politeness_key::PolitenessKey;
use crate::prefetch::prefetch_at;

/// The column read as a dictionary.
const HOST: &str = "host";

/// A row whose politeness key is value `index` of host dictionary `dictionary`: rows with equal
/// tokens have equal keys (never the converse: a host may be in many dictionaries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostToken {
    /// Which dictionary, unique in the process.
    pub dictionary: u64,
    /// The value's index in it.
    pub index: u32,
}

/// Numbers the dictionaries of every reader of the process.
static NEXT_DICTIONARY: AtomicU64 = AtomicU64::new(0);

/// `metadata` (loaded with [`reader_options`]), asking for the `host` column as a dictionary
/// (32-bit keys) where row group `row_group` stores it dictionary-encoded on most pages
/// ([`dictionary_pays`]); else unchanged. The key of `--politeness-key ip-column` is no host:
/// unchanged.
pub fn hinted(
    metadata: ArrowReaderMetadata,
    row_group: usize,
    key: PolitenessKey,
) -> ArrowReaderMetadata {
    if key == PolitenessKey::IpColumn {
        return metadata;
    }
    let schema = metadata.schema();
    let Ok(field) = schema.field_with_name(HOST) else {
        return metadata;
    };
    if !matches!(field.data_type(), DataType::Utf8 | DataType::LargeUtf8) {
        return metadata; // a dictionary already, or not text (refused by the schema check)
    }
    let leaf = metadata
        .parquet_schema()
        .columns()
        .iter()
        .position(|c| c.path().parts() == [HOST]);
    let Some(chunk) = leaf.map(|i| metadata.metadata().row_group(row_group).column(i)) else {
        return metadata;
    };
    if !dictionary_pays(chunk) {
        return metadata;
    }
    let fields: Vec<Arc<Field>> = schema
        .fields()
        .iter()
        .map(|f| {
            if f.name() == HOST {
                let values = Box::new(f.data_type().clone());
                let t = DataType::Dictionary(Box::new(DataType::Int32), values);
                Arc::new(f.as_ref().clone().with_data_type(t))
            } else {
                f.clone()
            }
        })
        .collect();
    let schema = Schema::new_with_metadata(fields, schema.metadata().clone());
    let options = ArrowReaderOptions::new().with_schema(Arc::new(schema));
    // the hint only saves work: if the reader declines it, read the column as it is
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), options).unwrap_or(metadata)
}

/// Options to load a page file's metadata with: page encoding statistics kept as counts (the
/// parquet crate's default keeps only which encodings occur), for [`dictionary_pays`].
pub fn reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_encoding_stats_as_mask(false)
}

/// Of a chunk's data pages, the share that must be dictionary-encoded for reading it as a
/// dictionary to pay.
///
/// Why: a writer falls back to plain pages once the chunk's dictionary outgrows its page limit
/// (1 MiB in Spark, pyarrow and this crate): 1M hosts in row groups of 131K rows did so on every
/// chunk, after 6 of 7 data pages. Asked for a dictionary, the reader re-encodes each batch of the
/// plain pages into a dictionary of its own (hashing every value), which then takes the memo
/// misses of a new dictionary. Measured on the read phase, against reading the chunk plain
/// (medians of 2-4 runs each way, in one invocation per set): 6 of 7 pages dictionary-encoded,
/// 2.98 -> 2.60 s; 5 of 8 on 3M hosts, even; 3 of 8 with every host distinct, 0.69 -> 0.75 s.
const DICTIONARY_PAGES_AT_LEAST: (i32, i32) = (2, 3);

/// Whether `chunk` is dictionary-encoded on at least [`DICTIONARY_PAGES_AT_LEAST`] of its data
/// pages, by its page encoding statistics (none given: only if the dictionary holds every page).
fn dictionary_pays(chunk: &ColumnChunkMetaData) -> bool {
    if chunk.dictionary_page_offset().is_none() {
        return false;
    }
    let dictionary =
        |e: Encoding| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY);
    if let Some(stats) = chunk.page_encoding_stats() {
        let (mut encoded, mut pages) = (0, 0);
        for s in stats {
            if matches!(s.page_type, PageType::DATA_PAGE | PageType::DATA_PAGE_V2) {
                pages += s.count;
                encoded += if dictionary(s.encoding) { s.count } else { 0 };
            }
        }
        let (num, den) = DICTIONARY_PAGES_AT_LEAST;
        return pages > 0 && encoded * den >= pages * num;
    }
    chunk.page_encoding_stats_mask().is_some_and(|mask| {
        mask.is_only(Encoding::PLAIN_DICTIONARY) || mask.is_only(Encoding::RLE_DICTIONARY)
    })
}

/// What a host dictionary's value makes of a row's politeness key, in 4 bytes (a row group's
/// table of them stays in the processor's cache): the value itself (most of them), another key
/// (upper case, a port, a domain's registrable part: `1 + i` for `others[i]`), or none.
type KeyCode = u32;
/// The value is the key as it stands.
const ITSELF: KeyCode = 0;
/// Null or blank: the row's key comes from its URL, as without a host value.
const ABSENT: KeyCode = u32::MAX;
/// The value names no host: the row is rejected for reason `Reason::ALL[INVALID - code]`.
const INVALID: KeyCode = ABSENT - 1;

/// The keys of the values of the host dictionary a reader last met, computed when it changes.
#[derive(Default)]
pub struct HostKeys {
    /// The dictionary's values, held so that their address stays theirs while compared.
    values: Option<ArrayRef>,
    dictionary: u64,
    codes: Vec<KeyCode>,
    others: Vec<String>,
}

/// A batch's host column as a dictionary whose keys are known.
pub struct KnownKeys<'k> {
    dictionary: u64,
    codes: &'k [KeyCode],
    others: &'k [String],
}

/// A row's politeness key from its host dictionary value.
pub enum RowKey<'a> {
    /// The key, and the token of every row with the same value.
    Known(&'a str, HostToken),
    /// Rejected for this reason.
    Invalid(Reason),
    /// No host value: the row's key comes from elsewhere (its URL).
    Absent,
}

impl HostKeys {
    /// The keys of `hosts`' dictionary under `key`, None if the column is plain (or `key` takes
    /// no host).
    pub fn of<'k>(
        &'k mut self,
        hosts: &TextColumn<'_>,
        key: PolitenessKey,
    ) -> Option<KnownKeys<'k>> {
        if key == PolitenessKey::IpColumn {
            return None;
        }
        let values = hosts.dictionary_values()?;
        let same = self
            .values
            .as_ref()
            .is_some_and(|v| std::ptr::addr_eq(Arc::as_ptr(v), Arc::as_ptr(values)));
        if !same {
            self.values = Some(values.clone());
            self.dictionary = NEXT_DICTIONARY.fetch_add(1, Ordering::Relaxed);
            self.others.clear();
            let mut codes = std::mem::take(&mut self.codes);
            codes.clear();
            for k in 0..hosts.dictionary_len() {
                codes.push(self.code_of(hosts.dictionary_value(k), key));
            }
            self.codes = codes;
        }
        Some(KnownKeys {
            dictionary: self.dictionary,
            codes: &self.codes,
            others: &self.others,
        })
    }

    /// What `value`, a row's host value, makes of its key under `key` (not `IpColumn`), as
    /// [`PolitenessKey::of`] would for the row.
    fn code_of(&mut self, value: Option<&str>, key: PolitenessKey) -> KeyCode {
        let Some(value) = value.filter(|v| !is_blank(v)) else {
            return ABSENT;
        };
        // given a host value, the key does not depend on the URL
        match key.of("", Some(value), None) {
            Ok(k) if k == value => ITSELF,
            Ok(k) => {
                self.others.push(k.into_owned());
                self.others.len() as KeyCode
            }
            Err(reason) => {
                let r = Reason::ALL.iter().position(|&r| r == reason);
                INVALID - r.expect("every reason is in Reason::ALL") as KeyCode
            }
        }
    }
}

/// Rows ahead of the one read that [`KnownKeys::prefetch`] asks for: a row's dictionary value and
/// its key are misses at random into a row group's dictionary (1 MB of names at 1M hosts).
const PREFETCH_ROWS: usize = 8;

impl KnownKeys<'_> {
    /// Asks for what [`KnownKeys::row`] reads at random to be brought into cache, for the rows a
    /// few ahead of row `i` (in two steps: a value's offset, then its bytes).
    #[inline]
    pub fn prefetch(&self, hosts: &TextColumn<'_>, i: usize) {
        if let Some(k) = hosts.prefetch_offset(i + 2 * PREFETCH_ROWS) {
            prefetch_at(self.codes.as_ptr().wrapping_add(k));
        }
        hosts.prefetch_value(i + PREFETCH_ROWS);
    }

    /// Row `i`'s key, of host column `hosts` (the column these keys were made from).
    #[inline]
    pub fn row<'a>(&'a self, hosts: &TextColumn<'a>, i: usize) -> RowKey<'a> {
        let Some(index) = hosts.key(i) else {
            return RowKey::Absent;
        };
        let token = HostToken {
            dictionary: self.dictionary,
            index: index as u32,
        };
        match self.codes[index] {
            ITSELF => match hosts.dictionary_value(index) {
                Some(v) => RowKey::Known(v, token),
                None => RowKey::Absent,
            },
            ABSENT => RowKey::Absent,
            code if code > INVALID - Reason::ALL.len() as KeyCode => {
                RowKey::Invalid(Reason::ALL[(INVALID - code) as usize])
            }
            code => RowKey::Known(&self.others[code as usize - 1], token),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};
    use std::path::Path;

    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, DictionaryArray, Float64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use parquet::schema::types::ColumnPath;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::io::pages::{self, Defaults, Origin, PageRow, Rejected};

    /// Host values as crawls spell them, and some that name no host.
    const HOSTS: [Option<&str>; 12] = [
        Some("a.example"),
        Some("b.example"),
        Some("shop.example.co.uk"),
        Some("B.Example"),
        Some("a.example:8080"),
        Some("http://a.example/x"),
        Some("c.example."),
        Some(""),
        Some("   "),
        None,
        Some("bad host!"),
        Some("10.0.0.7"),
    ];

    /// How a test file stores its host column.
    #[derive(Clone, Copy, Debug)]
    enum Layout {
        /// Plain strings, no dictionary anywhere.
        Plain,
        /// Strings, dictionary-encoded on every page (as writers do by default).
        Dictionary,
        /// Strings whose dictionary overflows after the first page: the rest falls back to plain.
        Fallback,
        /// Strings whose dictionary overflows late: 5 of 7 pages dictionary-encoded.
        LateFallback,
        /// An Arrow dictionary type (a pandas categorical), read as one whatever the pages.
        Categorical,
    }

    /// Rows of a row group from which every host value is new (the dictionary grows fast).
    const NEW_HOSTS_FROM: usize = 450;

    /// 3000 random rows, written with the host column laid out as `layout`, in row groups of 700
    /// (batches of the reader cross no row group, and each row group has its own dictionary) and
    /// pages of 100.
    fn write(path: &Path, layout: Layout) {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 3000;
        let mut urls = Vec::new();
        let mut hosts = Vec::new();
        let mut importance = Vec::new();
        for i in 0..n {
            let h = HOSTS[rng.random_range(0..HOSTS.len())].map(str::to_owned);
            let h = if i % 700 >= NEW_HOSTS_FROM {
                Some(format!("new{i}.example"))
            } else {
                h
            };
            let own = ["a.example", "b.example", "d.example"][rng.random_range(0..3)];
            urls.push((i % 97 != 0).then(|| format!("https://{own}/{i}")));
            hosts.push(h);
            importance.push(if i % 89 == 0 {
                -1.0
            } else {
                1.0 + (i % 5) as f64
            });
        }
        let ips: Vec<Option<&str>> = (0..n)
            .map(|i| ["10.0.0.1", "10.0.0.2", ""][i % 3])
            .map(Some)
            .collect();
        let host: ArrayRef = match layout {
            Layout::Categorical => Arc::new(
                hosts
                    .iter()
                    .map(Option::as_deref)
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
            _ => Arc::new(StringArray::from(hosts.clone())),
        };
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("url", Arc::new(StringArray::from(urls))),
            ("host", host),
            ("importance", Arc::new(Float64Array::from(importance))),
            ("change_rate", Arc::new(Float64Array::from(vec![0.5; n]))),
            ("ip", Arc::new(StringArray::from(ips))),
        ];
        let fields: Vec<Field> = columns
            .iter()
            .map(|(c, a)| Field::new(*c, a.data_type().clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let batch =
            RecordBatch::try_new(schema.clone(), columns.into_iter().map(|c| c.1).collect())
                .unwrap();
        let host = ColumnPath::from("host");
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(700))
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(100);
        let props = match layout {
            Layout::Plain => props.set_column_dictionary_enabled(host, false),
            Layout::Fallback => props.set_dictionary_page_size_limit(40),
            // the values of HOSTS fit; some 8 new hosts more do not
            Layout::LateFallback => props.set_dictionary_page_size_limit(300),
            Layout::Dictionary | Layout::Categorical => props,
        };
        let file = std::fs::File::create(path).unwrap();
        let mut w = ArrowWriter::try_new(file, schema, Some(props.build())).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    /// A page as `read_unit` gives it, owned.
    #[derive(Debug, PartialEq)]
    struct Page {
        url: String,
        host: String,
        key_is_urls_own: bool,
        importance: f64,
        origin: Origin,
    }

    /// Every page and rejection of `path` under `key`, and the host tokens the pages carried.
    fn read(path: &Path, key: PolitenessKey) -> (Vec<Page>, Vec<Rejected>, Vec<HostToken>) {
        let files = pages::open_all(&[path.to_path_buf()], key).unwrap();
        let defaults = Defaults {
            importance: 1.0,
            importance_fills_nulls: false,
            change_rate: 1.0,
            change_rate_fills_nulls: false,
        };
        let (mut out, mut rejected, mut tokens) = (Vec::new(), Vec::new(), Vec::new());
        for unit in pages::units(&files) {
            pages::read_unit(
                &files[0],
                unit,
                &defaults,
                |chunk: &[PageRow<'_>]| {
                    for p in chunk {
                        out.push(Page {
                            url: p.url.to_owned(),
                            host: p.host.to_owned(),
                            key_is_urls_own: p.key_is_urls_own,
                            importance: p.importance,
                            origin: p.origin,
                        });
                        tokens.extend(p.host_token);
                        if let Some(t) = p.host_token {
                            assert_eq!(t, *tokens.last().unwrap());
                        }
                    }
                },
                |r| rejected.push(r),
            )
            .unwrap();
        }
        (out, rejected, tokens)
    }

    /// (dictionary-encoded, all) data pages of the host column of each full row group of `path`.
    fn dictionary_pages(path: &Path) -> Vec<(i32, i32)> {
        let file = std::fs::File::open(path).unwrap();
        let metadata = ArrowReaderMetadata::load(&file, reader_options()).unwrap();
        let metadata = metadata.metadata();
        let host = metadata
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.name() == HOST)
            .unwrap();
        metadata
            .row_groups()
            .iter()
            .filter(|g| g.num_rows() == 700)
            .map(|g| {
                let (mut encoded, mut all) = (0, 0);
                for s in g.column(host).page_encoding_stats().unwrap() {
                    if s.page_type == PageType::DATA_PAGE {
                        all += s.count;
                        if s.encoding == Encoding::RLE_DICTIONARY {
                            encoded += s.count;
                        }
                    }
                }
                (encoded, all)
            })
            .collect()
    }

    #[test]
    fn a_host_dictionary_gives_every_row_the_key_of_its_plain_value() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("plain.parquet");
        write(&plain, Layout::Plain);
        for key in [
            PolitenessKey::Host,
            PolitenessKey::Domain,
            PolitenessKey::IpColumn,
        ] {
            let (pages_plain, rejected_plain, tokens) = read(&plain, key);
            assert!(tokens.is_empty());
            assert!(pages_plain.len() > 1000 && rejected_plain.len() > 100);
            for layout in [
                Layout::Dictionary,
                Layout::Fallback,
                Layout::LateFallback,
                Layout::Categorical,
            ] {
                let path = tmp.path().join(format!("{layout:?}.parquet"));
                write(&path, layout);
                let dictionary_pages = dictionary_pages(&path);
                let pages = match layout {
                    Layout::Dictionary | Layout::Categorical => (7, 7),
                    Layout::LateFallback => (5, 7),
                    _ => (1, 7),
                };
                assert!(
                    dictionary_pages.iter().all(|&p| p == pages),
                    "{layout:?}: {dictionary_pages:?} of (dictionary, all) data pages"
                );
                let (pages, rejected, tokens) = read(&path, key);
                assert!(pages == pages_plain, "{key:?} {layout:?}: pages differ");
                assert!(
                    rejected == rejected_plain,
                    "{key:?} {layout:?}: rejections differ"
                );
                // the dictionary was kept where it pays (not for the ip key, not where most pages
                // fell back to plain, unless the file asks for a dictionary type)
                let kept = match layout {
                    _ if key == PolitenessKey::IpColumn => false,
                    Layout::Fallback => false,
                    _ => true,
                };
                // each of the 5 row groups read as a dictionary of its own, or none
                let dictionaries: BTreeSet<u64> = tokens.iter().map(|t| t.dictionary).collect();
                let want = if kept { 5 } else { 0 };
                assert_eq!(dictionaries.len(), want, "{key:?} {layout:?}");
            }
        }
    }

    #[test]
    fn rows_of_one_token_have_one_key_and_each_row_group_a_dictionary_of_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("dictionary.parquet");
        write(&path, Layout::Dictionary);
        let files = pages::open_all(std::slice::from_ref(&path), PolitenessKey::Host).unwrap();
        let defaults = Defaults {
            importance: 1.0,
            importance_fills_nulls: true,
            change_rate: 1.0,
            change_rate_fills_nulls: true,
        };
        let mut key_of_token: HashMap<(u64, u32), String> = HashMap::new();
        let mut dictionaries_of_unit = Vec::new();
        for unit in pages::units(&files) {
            let mut dictionaries = BTreeSet::new();
            pages::read_unit(
                &files[0],
                unit,
                &defaults,
                |chunk| {
                    for p in chunk {
                        if let Some(t) = p.host_token {
                            dictionaries.insert(t.dictionary);
                            let key = key_of_token
                                .entry((t.dictionary, t.index))
                                .or_insert(p.host.to_owned());
                            assert_eq!(key, p.host, "{t:?}");
                        }
                    }
                },
                |_| {},
            )
            .unwrap();
            assert_eq!(dictionaries.len(), 1, "one dictionary a row group");
            dictionaries_of_unit.extend(dictionaries);
        }
        let distinct: BTreeSet<_> = dictionaries_of_unit.iter().collect();
        assert_eq!(dictionaries_of_unit.len(), 5);
        assert_eq!(distinct.len(), 5);
        // the upper-case and ported spellings have their own dictionary values and the same key
        assert!(key_of_token.values().filter(|k| *k == "b.example").count() >= 5 * 2);
    }
}
