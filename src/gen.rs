//! Synthetic page sets that look like the web, for demos, tests and benchmarks; seeded and
//! deterministic whatever the thread count.
//!
//! Host sizes follow Zipf(theta) over host ranks (a few huge hosts, a long tail of small ones),
//! importance is Pareto (heavy-tailed), change rates lognormal(ln 0.3, 1.2) per day clipped to
//! [5e-4, 7], a share of pages has complete change observations (sitemaps, pings), and a share of
//! hosts carries its own robots.txt Crawl-delay in the hosts table.
//!
//! Which pages have complete observations matters to every comparison of policies: NeurIPS'19's
//! "LC beats BLC on J_b" holds when they are the important pages (as the paper's sitemap-backed 4%
//! evidently were) and not when they are a random 4% (`scripts/neurips-exp1.sh` shows both).
//!
//! With `--history-days`, also the crawl history a daily crawler of these pages would have logged
//! ([`history`]).

pub mod history;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::{BooleanArray, Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Pareto, Zipf};

use crate::cli::heading;
use crate::io::{parquet_out, schema};
use crate::job::progress::Progress;

/// Parameters of a synthetic page set.
#[derive(Clone, Debug, clap::Args)]
pub struct GenArgs {
    /// Number of URLs
    #[arg(long, default_value_t = 100_000, value_name = "N", help_heading = heading::INPUT)]
    pub urls: u64,
    /// Number of hosts [default: one per 100 URLs]
    #[arg(long, value_name = "N", help_heading = heading::INPUT)]
    pub host_count: Option<u64>,
    /// Hosts of one page each, on top of --host-count
    ///
    /// The web's long tail of single-page sites. Their pages are spread evenly over the URLs (and
    /// so over the shards), taken from the Zipf hosts'.
    #[arg(long, default_value_t = 0, value_name = "N", help_heading = heading::INPUT)]
    pub single_page_hosts: u64,
    /// Zipf exponent of host sizes (1: the web's law)
    #[arg(long, default_value_t = 1.0, value_name = "EXPONENT", help_heading = heading::INPUT)]
    pub zipf: f64,
    /// Pareto shape of importance
    ///
    /// Smaller: a heavier tail (a few pages matter a lot).
    #[arg(long, default_value_t = 1.2, value_name = "SHAPE", help_heading = heading::INPUT)]
    pub importance_shape: f64,
    /// Median change rate, changes per day
    #[arg(long, default_value_t = 0.3, value_name = "PER_DAY", help_heading = heading::INPUT)]
    pub change_rate_median: f64,
    /// Log-standard deviation of change rates
    #[arg(long, default_value_t = 1.2, value_name = "SIGMA", help_heading = heading::INPUT)]
    pub change_rate_sigma: f64,
    /// Share of pages with complete observations
    ///
    /// Pages whose every change is notified (sitemaps, pings).
    #[arg(long, default_value_t = 0.04, value_name = "SHARE", help_heading = heading::INPUT)]
    pub complete_share: f64,
    /// Which pages are complete: random, importance
    ///
    /// random: each page with probability --complete-share; importance: the pages in the top
    /// --complete-share of the importance law (big sites with sitemaps and pings).
    #[arg(long, value_enum, default_value_t = CompleteBy::Random, value_name = "WHICH", hide_possible_values = true, help_heading = heading::INPUT)]
    pub complete_by: CompleteBy,
    /// Share of hosts with their own Crawl-delay
    #[arg(long, default_value_t = 0.05, value_name = "SHARE", help_heading = heading::BANDWIDTH)]
    pub delay_share: f64,
    /// Crawl-delay of the largest 1% of hosts, seconds
    ///
    /// As big sites often ask (default: none).
    #[arg(long, value_name = "SECONDS", help_heading = heading::BANDWIDTH)]
    pub big_host_delay_s: Option<f64>,
    /// Days of crawl history to write (0: none)
    ///
    /// history/day-NNN.parquet, one file per day, oldest first, ending at --history-end: each
    /// page crawled once a day at its own time of day, changed or not since the day before drawn
    /// from its change_rate; pages with complete_obs log one row per change notice instead. The
    /// format `revisit estimate` reads. 10M URLs x 30 days: 300M rows.
    #[arg(long, default_value_t = 0, value_name = "DAYS", help_heading = heading::OUTPUT)]
    pub history_days: u32,
    /// End of the crawl history, UTC [default: 00:00 today]
    ///
    /// An RFC 3339 time such as 2026-11-23T00:00:00Z; give one for the same bytes on another day.
    #[arg(long, value_name = "TIMESTAMP", help_heading = heading::OUTPUT)]
    pub history_end: Option<String>,
    /// Folder to write: pages/, hosts.parquet, history/
    ///
    /// pages/part-N.parquet, hosts.parquet, and with --history-days history/day-NNN.parquet.
    #[arg(long, default_value = "gen", value_name = "DIR", help_heading = heading::OUTPUT)]
    pub out: PathBuf,
    /// Parquet shards the pages are split into
    #[arg(long, default_value_t = 4, value_name = "N", help_heading = heading::OUTPUT)]
    pub shards: u32,
    /// Rows per row group, the unit of parallel reading
    #[arg(long, default_value_t = 65_536, value_name = "ROWS", help_heading = heading::OUTPUT)]
    pub row_group_rows: usize,
    /// Random seed: the same seed gives the same bytes
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = heading::OTHER)]
    pub seed: u64,
}

/// How the generator picks the pages whose changes are all observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompleteBy {
    /// Each page independently with probability --complete-share.
    Random,
    /// The pages whose importance lies in the top --complete-share of the importance law.
    Importance,
}

/// The importance above which a Pareto(1, `shape`) draw lies with probability `share`: P(X > x) =
/// x^-shape, so x = share^(-1/shape) (infinite for share 0: no page).
fn pareto_upper_quantile(shape: f64, share: f64) -> f64 {
    share.powf(-1.0 / shape)
}

/// Change rates are clipped to this range, changes per day (about once in 5 years to 7 a day).
const CHANGE_RATE_RANGE: (f64, f64) = (5e-4, 7.0);
/// Crawl-delays (seconds) drawn for hosts that set one.
const CRAWL_DELAYS_S: [f64; 6] = [1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

/// The host name of rank `rank` (1-based).
pub fn host_name(rank: u64) -> String {
    format!("www.site{rank}.example")
}

/// Writes the page set, saying how far it got on `progress`; returns the files written.
pub fn generate(args: &GenArgs, progress: &Progress) -> Result<Vec<PathBuf>> {
    if args.urls == 0 || args.shards == 0 {
        bail!("--urls and --shards must be at least 1");
    }
    let hosts = args.host_count.unwrap_or((args.urls / 100).max(1));
    if hosts == 0 {
        bail!("--host-count must be at least 1");
    }
    if args.single_page_hosts > args.urls {
        bail!(
            "--single-page-hosts ({}) cannot exceed --urls ({})",
            args.single_page_hosts,
            args.urls
        );
    }
    if !(0.0..=1.0).contains(&args.complete_share) {
        bail!(
            "--complete-share must be in [0, 1], got {}",
            args.complete_share
        );
    }
    // resolved before anything is written: a bad --history-end fails fast
    let span = history::HistorySpan::of(args)?;
    let pages_dir = args.out.join("pages");
    std::fs::create_dir_all(&pages_dir)
        .with_context(|| format!("creating {}", pages_dir.display()))?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(args.shards as usize);
    let shard_paths: Vec<PathBuf> = (0..args.shards)
        .map(|s| pages_dir.join(format!("part-{s:05}.parquet")))
        .collect();
    progress.say(format!(
        "writing {} URLs on {} hosts into {} shards under {}",
        args.urls,
        hosts,
        args.shards,
        pages_dir.display()
    ));
    let phase = std::sync::Mutex::new(progress.phase(args.shards as u64, "writing shards"));
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (paths, phase) = (&shard_paths, &phase);
                scope.spawn(move || -> Result<()> {
                    for s in (t..args.shards as usize).step_by(threads) {
                        write_shard(args, hosts, s as u32, &paths[s])?;
                        if let Ok(mut phase) = phase.lock() {
                            phase.inc(1);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("a generator thread panicked"))??;
        }
        Ok(())
    })?;
    if let Ok(phase) = phase.into_inner() {
        phase.finish();
    }
    let hosts_path = args.out.join("hosts.parquet");
    write_hosts(args, hosts, &hosts_path)?;
    let mut files = shard_paths;
    files.push(hosts_path);
    if let Some(span) = span {
        files.extend(history::write(args, hosts, span, progress)?);
    }
    Ok(files)
}

/// The single-page host (0-based, of `tail`) that URL `id` of `urls` is on, if any: the URLs where
/// floor(id * tail / urls) steps up, evenly spread.
fn single_page_host(id: u64, urls: u64, tail: u64) -> Option<u64> {
    let at = |i: u64| (i as u128 * tail as u128 / urls as u128) as u64;
    let next = at(id + 1);
    (next > at(id)).then(|| next - 1)
}

/// Pages generated for each chunk of a shard (and the history's unit of work).
const CHUNK_ROWS: u64 = 65_536;

/// The columns of one chunk of generated pages.
pub(crate) struct PageChunk {
    pub urls: Vec<String>,
    pub hosts: Vec<String>,
    pub importance: Vec<f64>,
    pub change_rate: Vec<f64>,
    pub complete: Vec<bool>,
}

/// A shard's pages, generated chunk by chunk: the same sequence every time it is made, so the
/// history can regenerate the pages it observes instead of holding or re-reading them.
pub(crate) struct ShardPages {
    rng: ChaCha8Rng,
    zipf: Zipf<f64>,
    pareto: Pareto<f64>,
    lognormal: LogNormal<f64>,
    important: f64,
    complete_share: f64,
    complete_by: CompleteBy,
    first_id: u64,
    rows: u64,
    done: u64,
    /// All URLs of the set, its Zipf hosts and its single-page hosts.
    urls: u64,
    hosts: u64,
    single_page_hosts: u64,
}

/// The pages of shard `shard`: (id of its first page, number of pages).
fn shard_range(args: &GenArgs, shard: u32) -> (u64, u64) {
    let per = args.urls / args.shards as u64;
    let extra = args.urls % args.shards as u64;
    (
        shard as u64 * per + (shard as u64).min(extra),
        per + u64::from((shard as u64) < extra),
    )
}

impl ShardPages {
    /// The pages of shard `shard` of `args.shards`, on `hosts` hosts.
    pub(crate) fn new(args: &GenArgs, hosts: u64, shard: u32) -> Result<ShardPages> {
        let (first_id, rows) = shard_range(args, shard);
        Ok(ShardPages {
            rng: ChaCha8Rng::seed_from_u64(
                args.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ shard as u64,
            ),
            zipf: Zipf::new(hosts as f64, args.zipf).context("--zipf must be >= 0")?,
            pareto: Pareto::new(1.0, args.importance_shape)
                .context("--importance-shape must be > 0")?,
            lognormal: LogNormal::new(args.change_rate_median.ln(), args.change_rate_sigma)
                .context("bad change-rate parameters")?,
            important: pareto_upper_quantile(args.importance_shape, args.complete_share),
            complete_share: args.complete_share,
            complete_by: args.complete_by,
            first_id,
            rows,
            done: 0,
            urls: args.urls,
            hosts,
            single_page_hosts: args.single_page_hosts,
        })
    }

    /// Chunks in a shard of `rows` pages.
    pub(crate) fn chunks_of(rows: u64) -> u64 {
        rows.div_ceil(CHUNK_ROWS)
    }

    /// The next chunk of pages, None after the last.
    pub(crate) fn next_chunk(&mut self) -> Option<PageChunk> {
        if self.done >= self.rows {
            return None;
        }
        let n = CHUNK_ROWS.min(self.rows - self.done) as usize;
        let mut c = PageChunk {
            urls: Vec::with_capacity(n),
            hosts: Vec::with_capacity(n),
            importance: Vec::with_capacity(n),
            change_rate: Vec::with_capacity(n),
            complete: Vec::with_capacity(n),
        };
        for k in 0..n {
            let id = self.first_id + self.done + k as u64;
            let rank = match single_page_host(id, self.urls, self.single_page_hosts) {
                Some(j) => self.hosts + 1 + j,
                None => self.zipf.sample(&mut self.rng) as u64,
            };
            let host = host_name(rank);
            c.urls.push(format!("https://{host}/p/{id:010x}.html"));
            c.hosts.push(host);
            let importance = self.pareto.sample(&mut self.rng);
            c.importance.push(importance);
            c.change_rate.push(
                self.lognormal
                    .sample(&mut self.rng)
                    .clamp(CHANGE_RATE_RANGE.0, CHANGE_RATE_RANGE.1),
            );
            // drawn in both modes, so that the modes differ only in this column
            let coin = self.rng.random_bool(self.complete_share);
            c.complete.push(match self.complete_by {
                CompleteBy::Random => coin,
                CompleteBy::Importance => importance > self.important,
            });
        }
        self.done += n as u64;
        Some(c)
    }
}

fn write_shard(args: &GenArgs, hosts: u64, shard: u32, path: &Path) -> Result<()> {
    let mut pages = ShardPages::new(args, hosts, shard)?;
    let mut writer = parquet_out::Writer::create(path, schema::pages(), &[], args.row_group_rows)?;
    while let Some(c) = pages.next_chunk() {
        let batch = RecordBatch::try_new(
            schema::pages(),
            vec![
                Arc::new(StringArray::from(c.urls)),
                Arc::new(StringArray::from(c.hosts)),
                Arc::new(Float64Array::from(c.importance)),
                Arc::new(Float64Array::from(c.change_rate)),
                Arc::new(BooleanArray::from(c.complete)),
            ],
        )?;
        writer.write(&batch)?;
    }
    writer.finish()?;
    Ok(())
}

fn write_hosts(args: &GenArgs, hosts: u64, path: &Path) -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 0x405);
    let (mut names, mut delays) = (Vec::new(), Vec::new());
    let big = (hosts / 100).max(1);
    for rank in 1..=hosts + args.single_page_hosts {
        if let (Some(delay), true) = (args.big_host_delay_s, rank <= big) {
            names.push(host_name(rank));
            delays.push(delay);
        } else if rng.random_bool(args.delay_share) {
            names.push(host_name(rank));
            delays.push(CRAWL_DELAYS_S[rng.random_range(0..CRAWL_DELAYS_S.len())]);
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("host", DataType::Utf8, false),
        Field::new("min_delay_s", DataType::Float64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(names)),
            Arc::new(Float64Array::from(delays)),
        ],
    )?;
    parquet_out::write(path, schema, &[batch], &[])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_single_page_hosts_hold_one_url_each_spread_over_the_urls() {
        for (urls, tail) in [
            (10u64, 3u64),
            (1000, 1000),
            (1000, 0),
            (7, 1),
            (100_003, 30_001),
        ] {
            let hosts: Vec<(u64, u64)> = (0..urls)
                .filter_map(|id| single_page_host(id, urls, tail).map(|j| (id, j)))
                .collect();
            // every tail host exactly once, in order
            assert_eq!(
                hosts.iter().map(|h| h.1).collect::<Vec<_>>(),
                (0..tail).collect::<Vec<_>>()
            );
            // evenly spread: tail host j sits in the j-th slice of the URLs
            for &(id, j) in &hosts {
                assert!(id * tail < (j + 1) * urls && (j + 1) * urls <= (id + 1) * tail);
            }
        }
    }
}
